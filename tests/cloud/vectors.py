"""Prints the signatures each cloud's SDK computes for the requests in src/cloud/sign_tests.rs.
Run: python3 tests/cloud/vectors.py"""

import sdk_sign

AK, SK = "AKIDEXAMPLE", "secretEXAMPLE/+="
DATE, ISO = "20261201T080000Z", "2026-12-01T08:00:00Z"
NONCE = "0123456789abcdef0123456789abcdef"

print("ctyun", sdk_sign.ctyun(
    "GET", "/v4/elb/show-loadbalancer", "regionID=bb9fdb42&elbID=lb-1%2Fx",
    {"Eop-date": DATE, "ctyun-eop-request-id": "01234567-89ab-cdef-0123-456789abcdef"},
    b"", AK, SK))

print("alibaba", sdk_sign.alibaba(
    "POST", "/", "LoadBalancerId=lb-2ze7&RegionId=cn-beijing",
    {"host": "slb.cn-beijing.example", "x-acs-action": "DescribeLoadBalancerAttribute",
     "x-acs-version": "2014-05-15", "x-acs-date": ISO, "x-acs-signature-nonce": NONCE,
     "x-acs-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "Authorization": "ACS3-HMAC-SHA256 Credential=x,SignedHeaders=host;x-acs-action;"
                      "x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature=x"},
    b"", AK, SK))

print("huawei", sdk_sign.huawei(
    "GET", "/v3/p-1/elb/listeners", "loadbalancer_id=elb-1&limit=100",
    {"Host": "elb.cn-north-4.example", "X-Sdk-Date": DATE, "Content-Type": "application/json",
     "X-Project-Id": "p-1",
     "Authorization": "SDK-HMAC-SHA256 Access=x, SignedHeaders=content-type;host;x-project-id;x-sdk-date, Signature=x"},
    b"", AK, SK))

print("volcengine", sdk_sign.volcengine(
    "GET", "/", "Action=DescribeListeners&LoadBalancerId=clb-1&Version=2020-04-01",
    {"Host": "clb.cn-beijing.example", "X-Date": DATE},
    b"", AK, SK, "cn-beijing", "clb"))
