"""Each cloud's signature, recomputed by that cloud's official Python SDK for a request as
received (its own timestamp and nonce). The mock cloud (mock.py) and the signing vectors
(vectors.py) use these; lbguard's signers (src/cloud/sign.rs) must agree with them."""

import datetime as _dt
import hashlib
import types
from urllib.parse import parse_qsl


class _Frozen(_dt.datetime):
    at = None

    @classmethod
    def now(cls, tz=None):
        return cls.at

    @classmethod
    def utcnow(cls):
        return cls.at


def _frozen_module(at):
    _Frozen.at = at
    return types.SimpleNamespace(datetime=_Frozen, timedelta=_dt.timedelta)


def _header(headers, name):
    for k, v in headers.items():
        if k.lower() == name.lower():
            return v
    return None


def _signed_headers(headers):
    """The header names the Authorization says it signed (`SignedHeaders=a;b;c`)."""
    auth = _header(headers, "Authorization") or ""
    for part in auth.split(" ", 1)[-1].replace(", ", ",").split(","):
        if part.startswith("SignedHeaders="):
            return [n for n in part[len("SignedHeaders="):].split(";") if n]
    return []


def _query(raw):
    return dict(parse_qsl(raw, keep_blank_values=True))


def ctyun(method, path, raw_query, headers, body, ak, sk):
    """The Eop-Authorization CTyun's ELB SDK computes for this request."""
    from ctyunsdk_elb20220909.core import signer
    from ctyunsdk_elb20220909.core.credential import Credential

    at = _dt.datetime.strptime(_header(headers, "Eop-date"), "%Y%m%dT%H%M%SZ")
    real = signer.datetime
    signer.datetime = _frozen_module(at)
    try:
        return signer.CtyunSigner.sign(
            credential=Credential(ak, sk),
            params=_query(raw_query),
            body=body.decode() if body else {},
            method=method,
            content_type="application/json;charset=UTF-8",
            request_id=_header(headers, "ctyun-eop-request-id"),
        )
    finally:
        signer.datetime = real


def alibaba(method, path, raw_query, headers, body, ak, sk):
    """The Authorization the Tea OpenAPI client (ACS3-HMAC-SHA256) computes, over the
    headers the request says it signed."""
    from alibabacloud_tea_openapi.utils import Utils

    names = _signed_headers(headers)
    req = types.SimpleNamespace(
        method=method,
        pathname=path,
        query=_query(raw_query),
        headers={n: _header(headers, n) for n in names if _header(headers, n) is not None},
    )
    payload = hashlib.sha256(body or b"").hexdigest()
    if _header(headers, "x-acs-content-sha256") != payload:
        return "x-acs-content-sha256 does not match the body"
    return Utils.get_authorization(req, "ACS3-HMAC-SHA256", payload, ak, sk)


def huawei(method, path, raw_query, headers, body, ak, sk):
    """The Authorization huaweicloudsdkcore's Signer computes over the signed headers."""
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdkcore.sdk_request import SdkRequest
    from huaweicloudsdkcore.signer.signer import Signer

    names = _signed_headers(headers)
    req = SdkRequest(
        method=method,
        schema="https",
        host=_header(headers, "Host"),
        resource_path=path,
        query_params=sorted(parse_qsl(raw_query, keep_blank_values=True)),
        header_params={n: _header(headers, n) for n in names if _header(headers, n) is not None},
        body=body or "",
    )
    Signer(BasicCredentials(ak, sk)).sign(req)
    return req.header_params["Authorization"]


def volcengine(method, path, raw_query, headers, body, ak, sk, region, service):
    """The Authorization volcenginesdkcore's SignerV4 computes for this request."""
    from volcenginesdkcore import signv4

    at = _dt.datetime.strptime(_header(headers, "X-Date"), "%Y%m%dT%H%M%SZ")
    real = signv4.datetime
    signv4.datetime = _frozen_module(at)
    try:
        h = {"Host": _header(headers, "Host")}
        for name in ("Content-Type", "Content-Md5"):
            if _header(headers, name) is not None:
                h[name] = _header(headers, name)
        token = _header(headers, "X-Security-Token")
        signv4.SignerV4.sign(
            path, method, h, (body or b"").decode(), [], _query(raw_query),
            ak, sk, region, service, token)
        return h["Authorization"]
    finally:
        signv4.datetime = real
