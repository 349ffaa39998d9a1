//! `lbguard rules --markdown`: the registry as a table, with what `export-vap` says of each
//! rule. It reads both the registry and the exporter, so it sits above both.

use crate::rules::for_provider;

/// The rule table as Markdown (the book's rules reference and `lbguard rules --markdown`).
pub fn markdown_table() -> String {
    markdown_table_for(None)
}

/// The table of the rules that apply to `provider` (all rules when `None`). The export-vap
/// column is what `lbguard export-vap --list [--provider P]` says with no config file, so the
/// page and the command cannot disagree; its header names the `--provider`.
pub fn markdown_table_for(provider: Option<crate::vocab::provider::Provider>) -> String {
    let mut config = crate::vocab::config::Config::default();
    if let Some(p) = provider {
        config.provider = crate::vocab::config::ProviderChoice::Fixed(p);
    }
    let export = crate::vap::export(
        &config,
        &crate::vocab::ctx::Versions::from_config(&config),
        None,
    );
    // The column says which command it answers for: on a cloud's page, `--provider` that cloud.
    let column = match provider {
        Some(p) => format!("export-vap --provider {} with no config", p.as_str()),
        None => "export-vap with no config".to_string(),
    };
    let mut out = format!(
        "| id | providers | class | default | what it checks | {column} |\n|---|---|---|---|---|---|\n"
    );
    for r in for_provider(provider) {
        let providers: Vec<&str> = r.providers.iter().map(|p| p.as_str()).collect();
        let vap = match (
            export.exported.iter().find(|x| x.rule.id == r.id),
            export.skipped.iter().find(|(id, _)| *id == r.id),
        ) {
            (Some(x), _) => format!("yes ({})", x.action.as_str()),
            (None, Some((_, why))) => format!("no: {why}"),
            (None, None) => "no".to_string(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            r.id,
            providers.join(", "),
            r.class.as_str(),
            r.default.as_str(),
            // `<port>` in a title is text, not an HTML tag.
            r.title.replace('<', "&lt;").replace('>', "&gt;"),
            vap
        ));
    }
    out
}
