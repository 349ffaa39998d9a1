//! `kubernetes.io/elb.tags` (`key=value,key=value`): the resource tags CCE puts on the ELB it
//! creates (OTC-0385 Table 5, :336-338), held to the ELB API's tag limits. Where the API's
//! sources disagree the less strict decides: huaweicloudDocs/elb@1d83a96:cn.zh-cn/API参考/
//! 添加负载均衡标签.md:127-137 gives keys of up to 36 characters and values of up to 43 (letters,
//! digits, '_', '-', '.', Chinese); huaweicloudsdkelb 3.1.219 v3/model/resource_tag.py, the newer
//! model, keys of up to 36 and values of up to 255 characters, neither with a non-printing
//! character or any of `=*<>\,|/`. The count: "A load balancer supports a maximum of 20 resource
//! tags. CCE automatically adds one tag, reducing the available quota to 19"
//! (opentelekomcloud-docs/cloud-container-engine@4863737:umn/source/networking/ingresses/
//! loadbalancer_ingresses/creating_a_loadbalancer_ingress_using_kubectl.rst:277-279, the same
//! annotation on an Ingress's ELB). Entries that are not key=value are the format check's.

use crate::vocab::service::Svc;

/// Tags a user may give: the ELB's 20 less the one CCE adds.
const MAX_TAGS: usize = 19;
/// Key and value lengths, in characters (resource_tag.py).
const KEY_MAX: usize = 36;
const VALUE_MAX: usize = 255;
/// Characters no key or value takes (resource_tag.py); `,` and the key's `=` cannot occur here.
const FORBIDDEN: &str = "=*<>\\|/";

fn bad_char(s: &str) -> Option<char> {
    s.chars().find(|c| c.is_control() || FORBIDDEN.contains(*c))
}

pub fn tags(value: &str, svc: Svc) -> Vec<String> {
    let mut out = Vec::new();
    // "This parameter can be configured only when a load balancer is automatically created"
    // (OTC-0385 :336-338): with an existing ELB CCE sends no tags.
    if super::catalog::CATALOG.get(svc, "autocreate").is_none() {
        return out;
    }
    let pairs: Vec<(&str, &str)> = value
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    if pairs.len() > MAX_TAGS {
        out.push(format!(
            "{} tags; an ELB takes 20 and CCE adds one of its own, so at most {MAX_TAGS} fit: remove {}",
            pairs.len(),
            pairs.len() - MAX_TAGS
        ));
    }
    for (k, v) in pairs {
        let (k, v) = (k.trim(), v.trim());
        if k.chars().count() > KEY_MAX {
            out.push(format!(
                "tag key \"{k}\" has {} characters; the ELB API takes keys of 1 to {KEY_MAX} characters: shorten it",
                k.chars().count()
            ));
        }
        if v.chars().count() > VALUE_MAX {
            out.push(format!(
                "the value of tag \"{k}\" has {} characters; the ELB API takes values of up to {VALUE_MAX} characters: shorten it",
                v.chars().count()
            ));
        }
        for (what, s) in [("key", k), ("value", v)] {
            if let Some(c) = bad_char(s) {
                out.push(format!(
                    "tag {what} \"{s}\" contains {c:?}; the ELB API takes no non-printing character and none of = * < > \\ | / in a tag key or value: replace it, e.g. with '-'"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "tags_tests.rs"]
mod tests;
