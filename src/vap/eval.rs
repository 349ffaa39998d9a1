//! The exported policies evaluated as the API server would, with a Rust CEL implementation,
//! next to the engine: every rule test and example checks that both give the same verdict.

use std::collections::HashMap;
use std::sync::Arc;

use cel::{Context, Env, Program, Value};
use serde_json::json;

use super::{Export, export};
use crate::vocab::action::Action;
use crate::vocab::config::Config;
use crate::vocab::ctx::Versions;
use crate::vocab::input::Input;

/// Kubernetes' CEL environment, as far as the exported CEL uses it: the standard library,
/// its macros and the strings extension (`lowerAscii`, `split`, ...).
fn env() -> Arc<Env> {
    thread_local! {
        static ENV: Arc<Env> = {
            let mut env = Env::stdlib();
            env.add_extension(cel::extensions::strings).expect("strings extension");
            Arc::new(env)
        };
    }
    ENV.with(Arc::clone)
}

fn compile(expr: &str) -> Arc<Program> {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, Arc<Program>>> = Default::default();
    }
    CACHE.with(|c| {
        if let Some(p) = c.borrow().get(expr) {
            return Arc::clone(p);
        }
        let p = Arc::new(
            env()
                .compile(expr)
                .unwrap_or_else(|e| panic!("CEL does not compile: {e:?}\n{expr}")),
        );
        c.borrow_mut().insert(expr.to_string(), Arc::clone(&p));
        p
    })
}

fn run(expr: &str, ctx: &Context) -> Value {
    compile(expr)
        .execute(ctx)
        .unwrap_or_else(|e| panic!("CEL fails at run time: {e:?}\n{expr}"))
}

/// The variables `expr` names (`variables.<name>`), outside string literals.
fn references(expr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in expr.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        if c == '\'' || c == '"' {
            quote = Some(c);
        } else if let Some(after) = expr[i..].strip_prefix("variables.") {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            out.push(&after[..len]);
        }
    }
    out
}

/// What the API server would do with `input`: per exported rule, the messages of the
/// validations that fail (none when a match condition or the namespace leaves it out).
pub fn failures(
    export: &Export,
    input: &Input,
    config: &Config,
) -> Vec<(&'static str, Action, Vec<String>)> {
    let object = input.object.as_ref().map_or(serde_json::Value::Null, |o| {
        serde_json::to_value(o).unwrap()
    });
    let old = input
        .old_object
        .as_ref()
        .map_or(serde_json::Value::Null, |o| {
            serde_json::to_value(o).unwrap()
        });
    let request = json!({
        "operation": input.operation.as_str(),
        "namespace": input.namespace,
        "name": input.name,
        "userInfo": {"username": input.user.username, "groups": input.user.groups},
    });
    let mut ctx = Context::with_env(env());
    for (name, v) in [
        ("object", &object),
        ("oldObject", &old),
        ("request", &request),
    ] {
        ctx.add_variable(name, cel::to_value(v).expect("JSON converts"));
    }
    // A policy that does not apply says nothing: that is compared with the engine too.
    let exempt = config.exemptions.namespaces.contains(&input.namespace);
    let policies = export
        .exported
        .iter()
        .flat_map(|e| e.policies.iter().map(|b| (e.rule.id, b.action, &b.policy)));
    // A rule split into several policies says what they say together.
    let mut out: Vec<(&'static str, Action, Vec<String>)> = Vec::new();
    let mut push = |rule: &'static str, action: Action, mut failed: Vec<String>| match out
        .iter_mut()
        .find(|(r, a, _)| *r == rule && *a == action)
    {
        Some((.., f)) => f.append(&mut failed),
        None => out.push((rule, action, failed)),
    };
    for (rule, action, policy) in policies {
        if exempt {
            push(rule, action, Vec::new());
            continue;
        }
        let spec = policy.spec.as_ref().unwrap();
        let ops = spec
            .match_constraints
            .as_ref()
            .unwrap()
            .resource_rules
            .as_ref()
            .unwrap()[0]
            .operations
            .clone()
            .unwrap_or_default();
        if !ops.iter().any(|o| o == input.operation.as_str()) {
            push(rule, action, Vec::new());
            continue;
        }
        let matched = spec
            .match_conditions
            .iter()
            .flatten()
            .all(|c| run(&c.expression, &ctx) == Value::Bool(true));
        if !matched {
            push(rule, action, Vec::new());
            continue;
        }
        // The policy's variables, each evaluated once for the request, as the API server
        // does; in rounds, each round those whose variables are known.
        let mut pctx = ctx.new_inner_scope();
        let mut values: HashMap<String, Value> = HashMap::new();
        let mut pending: Vec<&k8s_openapi::api::admissionregistration::v1::Variable> =
            spec.variables.iter().flatten().collect();
        while !pending.is_empty() {
            let ready = |e: &str| references(e).iter().all(|n| values.contains_key(*n));
            let (now, later): (Vec<_>, Vec<_>) =
                pending.into_iter().partition(|v| ready(&v.expression));
            assert!(
                !now.is_empty(),
                "variables that name undefined ones: {later:?}"
            );
            let round: Vec<(String, Value)> = now
                .iter()
                .map(|v| (v.name.clone(), run(&v.expression, &pctx)))
                .collect();
            values.extend(round);
            pctx.add_variable_from_value("variables", values.clone());
            pending = later;
        }
        let ctx = &pctx;
        let mut failed = Vec::new();
        for v in spec.validations.iter().flatten() {
            match run(&v.expression, ctx) {
                Value::Bool(true) => {}
                Value::Bool(false) => {
                    let msg = v.message_expression.as_deref().unwrap();
                    match run(msg, ctx) {
                        Value::String(s) => failed.push(s.to_string()),
                        other => panic!("messageExpression gives {other:?}: {msg}"),
                    }
                }
                other => panic!("validation gives {other:?}: {}", v.expression),
            }
        }
        push(rule, action, failed);
    }
    out
}

/// The messages of the exported policies of rule `id` that fail on `input` (tests compare
/// them with the webhook's).
pub fn policy_messages(
    input: &Input,
    config: &Config,
    versions: &Versions,
    id: &str,
) -> Vec<String> {
    let export = cached_export(config, versions);
    failures(&export, input, config)
        .into_iter()
        .filter(|(rule, ..)| *rule == id)
        .flat_map(|(.., failed)| failed)
        .collect()
}

/// `export`, once per config and versions (tests run thousands of evaluations).
fn cached_export(config: &Config, versions: &Versions) -> Arc<Export> {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, Arc<Export>>> = Default::default();
    }
    let key = format!(
        "{}|{versions:?}",
        serde_json::to_string(config).unwrap_or_default()
    );
    CACHE.with(|c| {
        if let Some(e) = c.borrow().get(&key) {
            return Arc::clone(e);
        }
        let e = Arc::new(export(config, versions, None));
        c.borrow_mut().insert(key, Arc::clone(&e));
        e
    })
}

/// Asserts that the exported policies and the engine agree on `input`, denials and warnings:
/// a policy fails exactly when the engine reports a finding of its rule at the policy's action
/// (a deny rule's advisory warnings through its advice policy). "Cannot tell" warnings (a
/// policy is only exported when the fact is known) and findings the update ratchet keeps
/// are the webhook's alone; findings the inventory cleared (`Verdict::cleared`) are the
/// policy's alone, as it cannot read the inventory.
pub fn assert_equivalent(
    input: &Input,
    config: &Config,
    versions: &Versions,
    verdict: &crate::engine::Verdict,
) {
    let export = cached_export(config, versions);
    let engine_says = |rule: &str, action: Action| -> Vec<&str> {
        verdict
            .violations
            .iter()
            .filter(|v| v.rule == rule && v.action == action && !v.inventory)
            .filter(|v| {
                !v.message
                    .ends_with("(already so before this update, so not blocking it)")
            })
            .filter(|v| {
                !v.message.contains("cannot tell")
                    && !v.message.contains("set ccm.users or ccm.groups")
            })
            .map(|v| v.message.as_str())
            .collect()
    };
    // A deny rule's warnings come from its advice policy; without one it must have none.
    for e in &export.exported {
        if e.action == Action::Deny && !e.policies.iter().any(|b| b.action == Action::Warn) {
            let warned = engine_says(e.rule.id, Action::Warn);
            assert!(
                warned.is_empty(),
                "rule {}: the webhook warns {warned:?}, no exported policy does\ninput: {}",
                e.rule.id,
                serde_json::to_string(&input.object).unwrap_or_default()
            );
        }
    }
    for (rule, action, failed) in failures(&export, input, config) {
        let engine = engine_says(rule, action);
        // The inventory cleared the engine's finding; the policy cannot read it.
        if engine.is_empty() && verdict.cleared.contains(&rule) {
            continue;
        }
        assert_eq!(
            failed.is_empty(),
            engine.is_empty(),
            "rule {rule}: the policy says {failed:?}, the engine {engine:?}\ninput: {}",
            serde_json::to_string(&input.object).unwrap_or_default()
        );
        for m in &failed {
            assert!(m.starts_with(&format!("[{rule}] ")), "{m}");
        }
    }
}
