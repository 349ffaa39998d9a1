//! `elb.autocreate` fields that CCE passes to the ELB API's CreateLoadBalancer, held to their
//! published limits (issue 39 notes, others.md). HW-ZH = Huawei's CCE table 表14 (elb.autocreate
//! 字段数据结构说明), https://huaweicloud.com/guide/productsdesc-bms_52e6fd85b173bb53c9539e1aa812e4c3support3;
//! OTC = OTC-0385 Table 15; SDK = PyPI huaweicloudsdkelb 3.1.219 v3/model/
//! create_load_balancer_option.py and create_load_balancer_bandwidth_option.py.

use std::net::Ipv4Addr;

use serde_json::{Map, Value};

/// `name` and `bandwidth_name`: "只能由中文、英文字母、数字、下划线、中划线、点组成,且长度范围为1-64个
/// 字符" (HW-ZH name, bandwidth_name; SDK bandwidth name: 1-64, digits, letters, Chinese, _ - .).
/// The API itself takes any load balancer name of up to 255 characters (SDK name); CCE's table is
/// the narrower one for `name`, and CCE refuses what it does not take.
const NAME_MAX: usize = 64;

fn han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}')
}

fn name_ok(v: &str) -> bool {
    let n = v.chars().count();
    (1..=NAME_MAX).contains(&n)
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') || han(c))
}

/// A subnet id as the API takes it: "标准的UUID格式，长度为36个字符" (SDK vip_subnet_cidr_id,
/// ipv6_vip_virsubnet_id).
fn uuid_ok(v: &str) -> bool {
    let groups: Vec<&str> = v.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn get<'a>(obj: &'a Map<String, Value>, k: &str) -> Option<&'a Value> {
    obj.get(k).filter(|v| !v.is_null())
}

pub(super) fn check(obj: &Map<String, Value>, why: &mut Vec<String>) {
    let public = get(obj, "type").and_then(Value::as_str) == Some("public");
    let mut names = vec!["name"];
    // bandwidth_name names the EIP's bandwidth, made only for a public ELB.
    if public {
        names.push("bandwidth_name");
    }
    for k in names {
        if let Some(v) = get(obj, k)
            && !v.as_str().is_some_and(name_ok)
        {
            why.push(format!(
                "\"{k}\" is {v}; CCE takes 1 to {NAME_MAX} characters: letters, digits, Chinese characters, '_', '-' and '.' (no spaces or '/'), e.g. \"{k}\": \"web-elb\""
            ));
        }
    }
    // HW-ZH, OTC vip_address: "仅支持指定IPv4地址,不支持指定IPv6地址"; SDK: [0-255].[0-255].[0-255].[0-255].
    if let Some(v) = get(obj, "vip_address")
        && v.as_str().is_none_or(|a| a.parse::<Ipv4Addr>().is_err())
    {
        why.push(format!(
            "\"vip_address\" is {v}; CCE takes an IPv4 address of the ELB's subnet (IPv6 is not supported), e.g. \"vip_address\": \"192.168.0.10\""
        ));
    }
    for k in ["vip_subnet_cidr_id", "ipv6_vip_virsubnet_id"] {
        if let Some(v) = get(obj, k)
            && !v.as_str().is_some_and(uuid_ok)
        {
            why.push(format!(
                "\"{k}\" is {v}; the ELB API takes a subnet id in UUID form (36 characters), e.g. \"{k}\": \"14567f27-8ae4-42b8-ae47-9f847a4690dd\""
            ));
        }
    }
    // SDK elb_virsubnet_ids: a list of network ids (OTC's example: an array of strings).
    if let Some(v) = get(obj, "elb_virsubnet_ids")
        && !v.as_array().is_some_and(|a| {
            a.iter()
                .all(|x| x.as_str().is_some_and(|s| !s.trim().is_empty()))
        })
    {
        why.push(format!(
            "\"elb_virsubnet_ids\" is {v}; CCE takes an array of subnet network ids, e.g. \"elb_virsubnet_ids\": [\"14567f27-8ae4-42b8-ae47-9f847a4690dd\"]"
        ));
    }
}
