"""A local HTTPS stand-in for the four clouds' load balancer APIs, for lbguard's tests.

It serves load balancers given in lbguard's inventory-file format, rendered into each cloud's
own response shapes, and checks every request's signature by recomputing it with that
cloud's official SDK signer (sdk_sign.py); a wrongly signed request gets the cloud's auth
error. Every body it serves is first parsed by the SDK's response model, strictly: a field
the model does not have fails the request (HTTP 599) and is counted.

  python3 mock.py --cert C --key K [--port 0]      prints "port N" once listening

Control, on the same server (unsigned, under /_mock/):
  POST /_mock/state   {"loadBalancers": [...], "region", "clusterId", "projectId"}
  POST /_mock/listener {"id", "port", "protocol"}        adds a listener
  POST /_mock/creds   {"ak", "sk", "token"?}              the one key pair accepted (and the
                                                          security token it needs, when given)
  POST /_mock/fault   {"mode": null|"throttle"|"server"|"auth"|"slow"|"html404"|"loop"|"listeners404"|"otherNotFound"|"listShort"|"ignoreIds"|"showFails"|"listFails"|"listenersFailOnce"|"neutron404"|"regionListenersDenied"|"serverGroupsFail", "delay": s}
                      html404: a proxy's HTML 404 page; loop: list pages repeat their token
                      (Alibaba's, Huawei's and Volcengine's region-wide NLB listener lists);
                      listeners404: Huawei's listener list answers "not found"
                      otherNotFound: Volcengine and CTyun answer a missing load balancer with a
                      code lbguard does not know
                      listShort: CTyun's list-loadbalancer answers only one of the ids asked
                      ignoreIds: CTyun's list-loadbalancer answers the whole region
                      showFails: CTyun's show-loadbalancer and Volcengine's attribute calls
                      answer every id with an error lbguard cannot place
                      listFails: CTyun's list-loadbalancer and Volcengine's load balancer lists
                      fail (5xx)
                      listenersFailOnce: CTyun's next list-listener call is throttled, once
                      neutron404: Huawei's v2 API answers a missing ELB as Neutron does, no code
                      (modes combine with "+", e.g. "showFails+ignoreIds")
                      regionListenersDenied: Volcengine refuses its listener lists without
                      a load balancer (AccessDenied), as a resource-scoped policy does
                      serverGroupsFail: Alibaba's NLB ListServerGroups fails (503)
  POST /_mock/prefix  {"prefix": "/api"}   the API is served under this path only
  POST /_mock/bulk    {"provider", "count", "kind"?, "vpcs"?, "serverGroups"?}  an account
                      with that many load balancers (CLBs, or NLBs spread round-robin over
                      "vpcs" VPCs with "serverGroups" server groups each)
  POST /_mock/paging  {"size": n}  items per page of the list APIs at most (default 100;
                      NLB's ListListeners for one NLB always serves one a page)
  GET  /_mock/calls   counts per operation, bad signatures, model failures, and how many
                      load balancers Alibaba's calls asked about (loadBalancersAsked)
  POST /_mock/reset   zeroes the counts
"""

import argparse
import os
import hashlib
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qsl

import sdk_sign

LOCK = threading.Lock()
STATE = {"loadBalancers": [], "region": "region-1", "clusterId": "c-own",
         "projectId": "p-1", "ak": "AKID", "sk": "SECRET", "fault": None, "delay": 0,
         "extra": [], "prefix": "", "token": None, "pageSize": 100}
# The header each cloud's SDK sends a security token in.
TOKEN_HEADERS = {"alibaba": "x-acs-security-token", "huawei": "X-Security-Token",
                 "volcengine": "X-Security-Token"}
CALLS = {"byOperation": {}, "badSignatures": 0, "modelFailures": [], "loadBalancersAsked": 0}


class ModelError(Exception):
    pass


# ---------- strict parsing with the SDKs' models ----------

def _swagger_check(data, cls, where):
    """Huawei and Volcengine models are swagger classes: attribute_map maps attribute to
    JSON key, openapi_types / swagger_types give each attribute's type."""
    types_ = getattr(cls, "openapi_types", None) or getattr(cls, "swagger_types")
    by_json = {v: k for k, v in cls.attribute_map.items()}
    kwargs = {}
    for key, value in data.items():
        if key not in by_json:
            raise ModelError(f"{where}: {cls.__name__} has no field {key}")
        attr = by_json[key]
        kwargs[attr] = _swagger_value(value, types_[attr], cls, f"{where}.{key}")
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ModelError(f"{where}: {cls.__name__}: {e}")


def _swagger_value(value, typ, owner, where):
    import importlib
    if value is None:
        return None
    if typ.startswith("list["):
        if not isinstance(value, list):
            raise ModelError(f"{where}: expected a list")
        return [_swagger_value(v, typ[5:-1], owner, f"{where}[]") for v in value]
    if typ.startswith("dict("):
        return value
    if typ in ("str", "int", "bool", "float", "object", "datetime", "date"):
        checks = {"str": str, "int": int, "bool": bool, "float": (int, float)}
        if typ in checks and not isinstance(value, checks[typ]):
            raise ModelError(f"{where}: {value!r} is not {typ}")
        return value
    module = importlib.import_module(owner.__module__.rsplit(".", 1)[0])
    cls = getattr(module, typ)
    if not isinstance(value, dict):
        raise ModelError(f"{where}: expected an object for {typ}")
    return _swagger_check(value, cls, where)


def check_huawei(body, cls_name, version):
    import importlib
    module = importlib.import_module(f"huaweicloudsdkelb.{version}.model")
    return _swagger_check(body, getattr(module, cls_name), cls_name)


def check_volcengine(result, cls_name):
    import volcenginesdkclb.models as m
    return _swagger_check(result, getattr(m, cls_name), cls_name)


def _kept(body, back):
    """Every field of `body` survives in `back` (to_map adds empty lists of its own)."""
    if isinstance(body, dict):
        return isinstance(back, dict) and all(k in back and _kept(v, back[k]) for k, v in body.items())
    if isinstance(body, list):
        return isinstance(back, list) and len(body) == len(back) and all(
            _kept(a, b) for a, b in zip(body, back))
    return body == back


def check_alibaba(body, cls):
    """Tea models: from_map then to_map must keep every field (none unknown to the model)."""
    parsed = cls().from_map(body)
    back = parsed.to_map()
    if not _kept(body, back):
        raise ModelError(f"{cls.__name__} does not round-trip: {json.dumps(body)} -> {json.dumps(back)}")
    return parsed


def check_alibaba_request(q, cls, limits):
    """The query as the SDK's request model sends it: every parameter a field of the model,
    `Key.N` only where the model has a list (the SDK's OpenApiUtil flattens lists so), a
    comma-separated string where it has a string, and no more ids than `limits` allows."""
    import inspect
    import re
    params = inspect.signature(cls.__init__).parameters
    attrs = dict(re.findall(r"result\['(\w+)'\] = self\.(\w+)", inspect.getsource(cls.to_map)))
    counts = {}
    for key in q:
        base, _, index = key.partition(".")
        if base not in attrs:
            raise ModelError(f"{cls.__name__} has no parameter {key}")
        is_list = "List" in str(params[attrs[base]].annotation)
        if bool(index) != is_list:
            raise ModelError(f"{cls.__name__}.{base} is {'a list' if is_list else 'not a list'}: got {key}")
        if index and (not index.isdigit() or int(index) < 1):
            raise ModelError(f"{cls.__name__}: bad index in {key}")
        counts[base] = counts.get(base, 0) + (1 if index else len(q[key].split(",")))
    for base, most in limits.items():
        if counts.get(base, 0) > most:
            raise ModelError(f"{cls.__name__}.{base}: {counts[base]} ids, the API takes {most}")


def check_huawei_request(query, cls_name, version="v3"):
    """Every parameter a field of the SDK's request model, repeated only where it is a list."""
    import importlib
    cls = getattr(importlib.import_module(f"huaweicloudsdkelb.{version}.model"), cls_name)
    by_json = {v: k for k, v in cls.attribute_map.items()}
    for key, values in query.items():
        if key not in by_json:
            raise ModelError(f"{cls_name} has no parameter {key}")
        if len(values) > 1 and not cls.openapi_types[by_json[key]].startswith("list["):
            raise ModelError(f"{cls_name}.{key} is not a list: {values}")


def check_volcengine_request(q, cls_name, most=20):
    """Every query parameter a field of the SDK's request model, `Key.N` only where the model
    has a list (as the SDK flattens one), at most `most` ids."""
    import volcenginesdkclb.models as m
    cls = getattr(m, cls_name)
    types_ = getattr(cls, "openapi_types", None) or getattr(cls, "swagger_types")
    by_json = {v: k for k, v in cls.attribute_map.items()}
    counts = {}
    for key in q:
        if key in ("Action", "Version"):
            continue
        base, _, index = key.partition(".")
        if base not in by_json:
            raise ModelError(f"{cls_name} has no parameter {key}")
        is_list = types_[by_json[base]].startswith("list[")
        if bool(index) != is_list:
            raise ModelError(f"{cls_name}.{base} is {'a list' if is_list else 'not a list'}: got {key}")
        counts[base] = counts.get(base, 0) + 1
    for key in ("PageSize", "MaxResults"):
        if int(q.get(key) or 0) > 100:
            raise ModelError(f"{cls_name}.{key}: {q[key]}, the API serves at most 100")
    if counts.get("LoadBalancerIds", 0) > most:
        raise ModelError(f"{cls_name}: {counts['LoadBalancerIds']} ids, more than {most}")


def paged(items, start, size):
    """One page of `items` from index `start`: the page, and whether more follow."""
    size = max(1, min(size, STATE["pageSize"]))
    return items[start:start + size], start + size < len(items)


def check_ctyun(body, response_cls, item_cls):
    parsed = response_cls.from_json(body)
    fields = set(response_cls.__dataclass_fields__)
    for k in body:
        if k not in fields:
            raise ModelError(f"{response_cls.__name__} has no field {k}")
    items = set(item_cls.__dataclass_fields__)
    for item in body.get("returnObj") or []:
        for k in item:
            if k not in items:
                raise ModelError(f"{item_cls.__name__} has no field {k}")
    return parsed


# ---------- the state, per provider ----------

def faulty(mode):
    """Whether `mode` is among the faults set (several join with "+")."""
    return mode in (STATE["fault"] or "").split("+")


def lbs(provider):
    return [lb for lb in STATE["loadBalancers"] if lb.get("provider") == provider]


def find(provider, lb_id):
    for lb in lbs(provider):
        if lb["id"] == lb_id:
            return lb
    return None


def listeners(lb):
    return list(lb.get("listeners") or []) + [
        e for e in STATE["extra"] if e["id"] == lb["id"]]


def owner_parts(owner):
    if not owner or owner == "external" or "/" not in owner:
        return None
    ns, name = owner.split("/", 1)
    return ns, name


def attached(lb):
    """attachedFrom entries become listeners another cluster's CCM made, on high ports."""
    out = []
    for i, a in enumerate(lb.get("attachedFrom") or []):
        out.append({"port": 30000 + i, "protocol": "TCP",
                    "ns": a["namespace"], "name": a["name"], "cluster": a["cluster"]})
    return out


# ---------- the handler ----------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without NODELAY the body waits for the
        # client's delayed ACK (40 ms a call).
        import socket
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def html(self, status):
        data = b"<html><body><h1>404 Not Found</h1>nginx</body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self, method):
        url = urlsplit(self.path)
        raw = self.body()
        if url.path.startswith("/_mock/"):
            return self.control(method, url.path, raw)
        with LOCK:
            prefix, fault = STATE["prefix"], STATE["fault"]
        if fault == "html404":
            return self.html(404)
        signed_path = url.path
        if prefix:
            if not url.path.startswith(prefix + "/"):
                return self.html(404)
            url = url._replace(path=url.path[len(prefix):])
        headers = {k: v for k, v in self.headers.items()}
        q = dict(parse_qsl(url.query, keep_blank_values=True))
        if url.path.startswith("/v4/elb/"):
            provider, op = "ctyun", url.path.rsplit("/", 1)[-1]
        elif url.path.startswith(("/v3/", "/v2/")):
            provider, op = "huawei", ("ListListeners" if url.path.endswith("/listeners")
                                     else "ListLoadBalancers" if url.path.endswith("/loadbalancers")
                                     else "ShowLoadBalancer")
        elif "x-acs-action" in {k.lower() for k in headers}:
            provider, op = "alibaba", self.headers.get("x-acs-action")
        elif "Action" in q:
            provider, op = "volcengine", q["Action"]
        else:
            return self.reply(404, {"error": f"no such API: {method} {url.path}"})
        with LOCK:
            CALLS["byOperation"][f"{provider}/{op}"] = CALLS["byOperation"].get(f"{provider}/{op}", 0) + 1
            ak, sk, fault, delay = STATE["ak"], STATE["sk"], STATE["fault"], STATE["delay"]
        if fault == "slow":
            time.sleep(delay)
        if fault == "auth":
            ak, sk = ak, sk + "-rotated-away"
        good = self.signed(provider, method, url._replace(path=signed_path), headers, raw, ak, sk)
        with LOCK:
            token = STATE["token"]
        if token and self.headers.get(TOKEN_HEADERS.get(provider, "-")) != token:
            good = False
        if not good:
            with LOCK:
                CALLS["badSignatures"] += 1
            return self.auth_error(provider)
        if fault == "throttle":
            return self.throttled(provider)
        if fault == "server":
            return self.server_error(provider)
        try:
            with LOCK:
                return getattr(self, provider)(op, url, q, raw)
        except ModelError as e:
            with LOCK:
                CALLS["modelFailures"].append(str(e))
            return self.reply(599, {"error": str(e)})

    def signed(self, provider, method, url, headers, raw, ak, sk):
        if provider == "ctyun":
            want = sdk_sign.ctyun(method, url.path, url.query, headers, raw, ak, sk)
            got = self.headers.get("Eop-Authorization")
        elif provider == "alibaba":
            want = sdk_sign.alibaba(method, url.path, url.query, headers, raw, ak, sk)
            got = self.headers.get("Authorization")
        elif provider == "huawei":
            want = sdk_sign.huawei(method, url.path, url.query, headers, raw, ak, sk)
            got = self.headers.get("Authorization")
        else:
            want = sdk_sign.volcengine(method, url.path, url.query, headers, raw, ak, sk,
                                       STATE["region"], "clb")
            got = self.headers.get("Authorization")
        if got != want and os.environ.get("LBGUARD_MOCK_DEBUG"):
            print(f"mock: {provider} signature: got {got!r}, want {want!r}; headers {headers}",
                  file=sys.stderr, flush=True)
        return got is not None and got == want

    # ----- errors, in each cloud's shape -----

    def auth_error(self, p):
        if p == "ctyun":
            return self.reply(401, {"statusCode": 900, "errorCode": "Openapi.Signature.Invalid",
                                    "message": "signature does not match", "description": "签名错误"})
        if p == "alibaba":
            return self.reply(400, {"Code": "SignatureDoesNotMatch", "RequestId": "r",
                                    "Message": "Specified signature is not matched with our calculation."})
        if p == "huawei":
            return self.reply(401, {"error_code": "APIGW.0301", "request_id": "r",
                                    "error_msg": "Incorrect IAM authentication information: verify aksk signature fail"})
        return self.reply(401, self.volc_error("SignatureDoesNotMatch", "The request signature does not match"))

    def throttled(self, p):
        if p == "ctyun":
            return self.reply(429, {"statusCode": 900, "errorCode": "Openapi.Throttling", "message": "too many requests"})
        if p == "alibaba":
            return self.reply(400, {"Code": "Throttling.User", "RequestId": "r", "Message": "Request was denied due to user flow control."})
        if p == "huawei":
            return self.reply(429, {"error_code": "APIGW.0308", "request_id": "r", "error_msg": "The throttling threshold has been reached"})
        return self.reply(429, self.volc_error("FlowLimitExceeded", "flow limit exceeded"))

    def server_error(self, p):
        if p == "alibaba":
            return self.reply(503, {"Code": "ServiceUnavailable", "RequestId": "r", "Message": "The request has failed due to a temporary failure of the server."})
        if p == "volcengine":
            return self.reply(500, self.volc_error("InternalError", "internal error"))
        return self.reply(503, {"error": "service unavailable"})

    def volc_error(self, code, message):
        return {"ResponseMetadata": {"RequestId": "r", "Action": "", "Version": "2020-04-01",
                                     "Service": "clb", "Region": STATE["region"],
                                     "Error": {"Code": code, "Message": message}}}

    # ----- CTyun -----

    def ctyun(self, op, url, q, raw):
        from ctyunsdk_elb20220909.apis import ctelb_show_load_balancer_api as show
        from ctyunsdk_elb20220909.apis import ctelb_list_listener_api as ls
        if op == "list-loadbalancer":
            return self.ctyun_list(q)
        if op == "list-listener" and faulty("listenersFailOnce") and not STATE.get("failedOnce"):
            STATE["failedOnce"] = True
            return self.reply(200, {"statusCode": 900, "errorCode": "Openapi.Throttling",
                                    "message": "too many requests", "returnObj": None})
        if op == "show-loadbalancer" and faulty("showFails"):
            return self.reply(200, {"statusCode": 900, "errorCode": "Openapi.Gateway.Unavailable",
                                    "message": "try again later", "description": "稍后重试",
                                    "returnObj": None})
        lb = find("ctyun", q.get("elbID") or q.get("loadBalancerID"))
        if lb is None or q.get("regionID") != STATE["region"]:
            code = "Openapi.LoadBalancer.NotFound"
            if STATE["fault"] == "otherNotFound":
                code = "Elb.LoadBalancer.NotFound"
            return self.reply(200, {"statusCode": 900, "errorCode": code,
                                    "message": "load balancer not found", "description": "负载均衡不存在",
                                    "returnObj": None})
        if op == "show-loadbalancer":
            body = {"statusCode": 800, "message": "success", "description": "成功",
                    "errorCode": "SUCCESS", "returnObj": [self.ctyun_item(lb)]}
            check_ctyun(body, show.CtelbShowLoadBalancerResponse, show.CtelbShowLoadBalancerReturnObjResponse)
        else:
            items = [{"iD": f"listener-{l['port']}", "name": f"listener-{l['port']}",
                      "loadBalancerID": lb["id"], "regionID": STATE["region"],
                      "protocol": l["protocol"].upper(), "protocolPort": l["port"], "status": "ACTIVE"}
                     for l in listeners(lb)]
            body = {"statusCode": 800, "message": "success", "description": "成功",
                    "errorCode": "SUCCESS", "returnObj": items}
            check_ctyun(body, ls.CtelbListListenerResponse, ls.CtelbListListenerReturnObjResponse)
        return self.reply(200, body)

    def ctyun_item(self, lb):
        return {"regionID": STATE["region"], "iD": lb["id"], "name": lb["id"],
                "vpcID": lb.get("vpcId") or "", "status": "ACTIVE", "adminStatus": "ACTIVE",
                "resourceType": "external" if lb.get("addressType") == "internet" else "internal"}

    def ctyun_list(self, q):
        """list-loadbalancer by `iDs` (comma-separated), as the refresh's batches ask it. Not
        paged; with the fault listShort it answers only the first id it has, with ignoreIds
        every load balancer of the region."""
        from ctyunsdk_elb20220909.apis import ctelb_list_load_balancer_api as lst
        fields = set(lst.CtelbListLoadBalancerRequest.__dataclass_fields__)
        for key in q:
            if key not in fields:
                raise ModelError(f"CtelbListLoadBalancerRequest has no parameter {key}")
        ids = [i for i in (q.get("iDs") or "").split(",") if i]
        if faulty("listFails"):
            return self.reply(503, {"statusCode": 900, "errorCode": "Openapi.Unavailable", "message": "busy"})
        if not ids or len(ids) > 20:
            raise ModelError(f"list-loadbalancer: {len(ids)} ids in iDs (the refresh asks 1 to 20)")
        items = [self.ctyun_item(lb) for lb in lbs("ctyun")
                 if (lb["id"] in ids or faulty("ignoreIds"))
                 and q.get("regionID") == STATE["region"]]
        if STATE["fault"] == "listShort":
            items = items[:1]
        body = {"statusCode": 800, "message": "success", "description": "成功",
                "errorCode": "SUCCESS", "returnObj": items}
        check_ctyun(body, lst.CtelbListLoadBalancerResponse, lst.CtelbListLoadBalancerReturnObjResponse)
        return self.reply(200, body)

    # ----- Alibaba -----

    def ali_tags(self, lb):
        by = lb.get("createdBy")
        if by == "ccm":
            return [{"TagKey": "kubernetes.do.not.delete", "TagValue": "a" + hashlib.md5(lb["id"].encode()).hexdigest()[:31]},
                    {"TagKey": "ack.aliyun.com", "TagValue": STATE["clusterId"]}]
        if by == "apiserver":
            return [{"TagKey": "ack.aliyun.com", "TagValue": STATE["clusterId"]}]
        return [{"TagKey": "team", "TagValue": "platform"}]

    def ali_listeners(self, lb, nlb):
        out = []
        for l in listeners(lb):
            parts = owner_parts(l.get("owner"))
            out.append((l["port"], l["protocol"], parts[0] if parts else None,
                        parts[1] if parts else None, STATE["clusterId"]))
        for a in attached(lb):
            out.append((a["port"], a["protocol"], a["ns"], a["name"], a["cluster"]))
        rendered = []
        for port, proto, ns, name, cid in out:
            if ns is None:
                desc = f"listener {port}"
            elif nlb:
                desc = f"k8s.{port}.{proto.upper()}.{name}.{ns}.{cid}"
            else:
                desc = f"k8s/{port}/{name}/{ns}/{cid}"
            rendered.append((port, proto, desc))
        return rendered

    def alibaba(self, op, url, q, raw):
        from alibabacloud_slb20140515 import models as slb
        from alibabacloud_nlb20220430 import models as nlb
        version = self.headers.get("x-acs-version")
        want = {"DescribeLoadBalancerAttribute": "2014-05-15", "GetLoadBalancerAttribute": "2022-04-30",
                "ListListeners": "2022-04-30", "DescribeLoadBalancers": "2014-05-15",
                "DescribeLoadBalancerListeners": "2014-05-15", "ListLoadBalancers": "2022-04-30",
                "ListServerGroups": "2022-04-30"}.get(op)
        if want is None or want != version:
            return self.reply(400, {"Code": "InvalidAction.NotFound", "RequestId": "r",
                                    "Message": f"{op} {version}"})
        models = slb if version == "2014-05-15" else nlb
        if op in ("DescribeLoadBalancerAttribute", "GetLoadBalancerAttribute", "DescribeLoadBalancers",
                  "ListLoadBalancers"):
            # How many load balancers the calls asked about (the listener lists aside).
            CALLS["loadBalancersAsked"] += sum(len(v.split(",")) for k, v in q.items()
                                               if k.startswith("LoadBalancerId"))
        check_alibaba_request(q, getattr(models, f"{op}Request"),
                              {"LoadBalancerId": 10, "LoadBalancerIds": 20})
        if op in ("DescribeLoadBalancers", "DescribeLoadBalancerListeners", "ListLoadBalancers"):
            return self.alibaba_list(op, q, slb, nlb)
        if op == "ListServerGroups":
            if faulty("serverGroupsFail"):
                return self.server_error("alibaba")
            return self.ali_server_groups(q, nlb)
        if q.get("RegionId") != STATE["region"]:
            lb = None
        else:
            lb = find("alibaba", q.get("LoadBalancerId") or q.get("LoadBalancerIds.1"))
        if op == "DescribeLoadBalancerAttribute":
            if lb is None or lb.get("kind") == "nlb":
                return self.reply(404, {"Code": "InvalidLoadBalancerId.NotFound", "RequestId": "r",
                                        "Message": "The specified load balancer does not exist."})
            body = {"LoadBalancerId": lb["id"], "RegionId": STATE["region"], "RequestId": "r",
                    "AddressType": lb.get("addressType") or "internet", **self.ali_clb_facts(lb),
                    "VpcId": lb.get("vpcId") or "", "LoadBalancerStatus": "active",
                    "Tags": {"Tag": self.ali_tags(lb)},
                    "ListenerPortsAndProtocol": {"ListenerPortAndProtocol": [
                        {"ListenerPort": p, "ListenerProtocol": proto.lower(), "Description": d}
                        for p, proto, d in self.ali_listeners(lb, False)]}}
            check_alibaba(body, slb.DescribeLoadBalancerAttributeResponseBody)
            return self.reply(200, body)
        if lb is None or lb.get("kind") != "nlb":
            return self.reply(404, {"Code": "ResourceNotFound.loadBalancer", "RequestId": "r",
                                    "Message": "The specified resource loadBalancer is not found."})
        if op == "GetLoadBalancerAttribute":
            at = lb.get("addressType") or "internet"
            body = {"LoadBalancerId": lb["id"], "RegionId": STATE["region"], "RequestId": "r",
                    "AddressType": at.capitalize(), "VpcId": lb.get("vpcId") or "",
                    "LoadBalancerStatus": "Active", "Tags": self.ali_tags(lb),
                    **self.ali_nlb_facts(lb)}
            check_alibaba(body, nlb.GetLoadBalancerAttributeResponseBody)
            return self.reply(200, body)
        # Every NLB named (LoadBalancerIds.N), as the refresh's batches ask.
        asked = [v for k, v in sorted(q.items()) if k.startswith("LoadBalancerIds.")]
        named = [lb] + [o for o in lbs("alibaba") if o["id"] in asked[1:] and o.get("kind") == "nlb"]
        items = [{"ListenerId": f"lsn-{p}", "ListenerPort": p, "ListenerProtocol": proto.upper(),
                  "ListenerDescription": d, "LoadBalancerId": o["id"], "RegionId": STATE["region"]}
                 for o in named for p, proto, d in self.ali_listeners(o, True)]
        # One listener a page for one NLB, so the client's paging is exercised; a batch's
        # pages as the list APIs' (MaxResults, at most the mock's page size).
        start = int(q.get("NextToken") or 0)
        size = 1 if len(asked) <= 1 else int(q.get("MaxResults") or 20)
        page, more = paged(items, start, size)
        token = str(start + len(page)) if more else ""
        if STATE["fault"] == "loop":
            token = q.get("NextToken") or "1"
        body = {"Listeners": page, "MaxResults": 100, "NextToken": token, "RequestId": "r",
                "TotalCount": len(items)}
        check_alibaba(body, nlb.ListListenersResponseBody)
        return self.reply(200, body)

    def ali_server_groups(self, q, nlb):
        """NLB ListServerGroups by VpcId: the serverGroups of the file's NLBs in that VPC,
        paged by NextToken."""
        region = q.get("RegionId") == STATE["region"]
        items, seen = [], set()
        for lb in lbs("alibaba"):
            if not region or lb.get("kind") != "nlb" or lb.get("vpcId") != q.get("VpcId"):
                continue
            for g in lb.get("serverGroups") or []:
                if g["id"] in seen:
                    continue
                seen.add(g["id"])
                items.append({"ServerGroupId": g["id"], "ServerGroupType": g["type"],
                              "ServerGroupName": f"group-{g['id']}", "ServerGroupStatus": "Available",
                              "Protocol": "TCP", "VpcId": lb["vpcId"], "RegionId": STATE["region"],
                              "RelatedLoadBalancerIds": [lb["id"]]})
        start = int(q.get("NextToken") or 0)
        page, more = paged(items, start, int(q.get("MaxResults") or 20))
        token = str(start + len(page)) if more else ""
        body = {"ServerGroups": page, "MaxResults": int(q.get("MaxResults") or 20), "NextToken": token,
                "RequestId": "r", "TotalCount": len(items)}
        check_alibaba(body, nlb.ListServerGroupsResponseBody)
        return self.reply(200, body)

    @staticmethod
    def ali_clb_facts(lb):
        """The attributes ACK's CLB controller compares with a reused load balancer, as the
        SLB API names them (only those the file gives)."""
        names = {"resourceGroupId": "ResourceGroupId", "masterZoneId": "MasterZoneId",
                 "slaveZoneId": "SlaveZoneId", "ipVersion": "AddressIPVersion",
                 "networkType": "NetworkType", "address": "Address",
                 "chargeType": "InstanceChargeType", "spec": "LoadBalancerSpec"}
        return {api: lb[k] for k, api in names.items() if k in lb}

    @staticmethod
    def ali_nlb_facts(lb):
        """The same for NLB, as the NLB API names them."""
        names = {"resourceGroupId": "ResourceGroupId", "ipVersion": "AddressIpVersion",
                 "address": "DNSName"}
        return {api: lb[k] for k, api in names.items() if k in lb}

    def alibaba_list(self, op, q, slb, nlb):
        """The list calls the refresh makes for many load balancers at once."""
        region = q.get("RegionId") == STATE["region"]
        if op == "DescribeLoadBalancers":
            ids = (q.get("LoadBalancerId") or "").split(",")
            found = [lb for lb in lbs("alibaba") if region and lb["id"] in ids and lb.get("kind") != "nlb"]
            # Numbered pages of the size the mock serves (a real one serves PageSize).
            number = int(q.get("PageNumber") or 1)
            size = max(1, min(int(q.get("PageSize") or 10), STATE["pageSize"]))
            page, _ = paged(found, (number - 1) * size, size)
            items = [{"LoadBalancerId": lb["id"], "RegionId": STATE["region"],
                      "AddressType": lb.get("addressType") or "internet", **self.ali_clb_facts(lb),
                      "VpcId": lb.get("vpcId") or "", "LoadBalancerStatus": "active",
                      "Tags": {"Tag": self.ali_tags(lb)}} for lb in page]
            body = {"LoadBalancers": {"LoadBalancer": items}, "PageNumber": number,
                    "PageSize": size, "RequestId": "r", "TotalCount": len(found)}
            check_alibaba(body, slb.DescribeLoadBalancersResponseBody)
            return self.reply(200, body)
        ids = [v for k, v in sorted(q.items()) if k.startswith("LoadBalancerId")]
        if op == "ListLoadBalancers":
            found = [lb for lb in lbs("alibaba") if region and lb["id"] in ids and lb.get("kind") == "nlb"]
            start = int(q.get("NextToken") or 0)
            page, more = paged(found, start, int(q.get("MaxResults") or 20))
            items = [{"LoadBalancerId": lb["id"], "RegionId": STATE["region"], "LoadBalancerType": "Network",
                      "AddressType": (lb.get("addressType") or "internet").capitalize(),
                      "VpcId": lb.get("vpcId") or "", "LoadBalancerStatus": "Active",
                      "Tags": [{"Key": t["TagKey"], "Value": t["TagValue"]} for t in self.ali_tags(lb)],
                      **self.ali_nlb_facts(lb)}
                     for lb in page]
            body = {"LoadBalancers": items, "MaxResults": int(q.get("MaxResults") or 20),
                    "NextToken": str(start + len(page)) if more else "", "RequestId": "r",
                    "TotalCount": len(found)}
            check_alibaba(body, nlb.ListLoadBalancersResponseBody)
            return self.reply(200, body)
        # DescribeLoadBalancerListeners: every listener of the CLBs named, paged by NextToken.
        found = [lb for lb in lbs("alibaba") if region and lb["id"] in ids and lb.get("kind") != "nlb"]
        items = [{"ListenerPort": p, "ListenerProtocol": proto.lower(), "Description": d,
                  "LoadBalancerId": lb["id"], "Status": "running"}
                 for lb in found for p, proto, d in self.ali_listeners(lb, False)]
        start = int(q.get("NextToken") or 0)
        page, more = paged(items, start, int(q.get("MaxResults") or 20))
        token = str(start + len(page)) if more else ""
        if STATE["fault"] == "loop":
            token = q.get("NextToken") or "1"
        body = {"Listeners": page, "MaxResults": int(q.get("MaxResults") or 20), "NextToken": token,
                "RequestId": "r", "TotalCount": len(items)}
        check_alibaba(body, slb.DescribeLoadBalancerListenersResponseBody)
        return self.reply(200, body)

    # ----- Huawei -----

    def huawei(self, op, url, q, raw):
        parts = url.path.strip("/").split("/")
        if len(parts) < 3 or parts[1] != STATE["projectId"] or self.headers.get("X-Project-Id") != STATE["projectId"]:
            return self.reply(403, {"error_code": "APIGW.0101", "request_id": "r", "error_msg": "project mismatch"})
        version = parts[0]
        if version == "v2":
            return self.huawei_v2(op, parts, q)
        from urllib.parse import parse_qs
        multi = parse_qs(url.query, keep_blank_values=True)
        if op == "ListLoadBalancers":
            check_huawei_request(multi, "ListLoadBalancersRequest")
            found = [lb for lb in lbs("huawei") if lb["id"] in multi.get("id", []) and not lb.get("v2")]
            page, more = self.huawei_page(found, q)
            body = {"request_id": "r", "loadbalancers": [self.huawei_lb(lb) for lb in page],
                    "page_info": dict({"current_count": len(page)},
                                      **({"next_marker": page[-1]["id"]} if more else {}))}
            check_huawei(body, "ListLoadBalancersResponse", "v3")
            return self.reply(200, body)
        if op == "ShowLoadBalancer":
            lb = find("huawei", parts[-1])
            # An entry marked "v2" is an older shared ELB that only the v2 API knows.
            if lb is None or lb.get("v2"):
                return self.reply(404, {"error_code": "ELB.8904", "request_id": "r",
                                        "error_msg": f"loadbalancer {parts[-1]} could not be found"})
            body = {"request_id": "r", "loadbalancer": self.huawei_lb(lb)}
            check_huawei(body, "ShowLoadBalancerResponse", "v3")
            return self.reply(200, body)
        check_huawei_request(multi, "ListListenersRequest")
        if STATE["fault"] == "listeners404":
            return self.reply(404, {"error_code": "ELB.8904", "request_id": "r",
                                    "error_msg": "listener list: loadbalancer could not be found"})
        items = [i for lb_id in multi.get("loadbalancer_id", [])
                 for i in self.huawei_listeners(find("huawei", lb_id))]
        page, more = self.huawei_page(items, q)
        info = {"current_count": len(page)}
        if more:
            info["next_marker"] = page[-1]["id"]
        if STATE["fault"] == "loop" and items:
            # The first page again and again, with the same marker.
            page, _ = paged(items, 0, int(q.get("limit") or 2000))
            info = {"current_count": len(page), "next_marker": page[-1]["id"]}
        body = {"request_id": "r", "listeners": page, "page_info": info}
        check_huawei(body, "ListListenersResponse", "v3")
        return self.reply(200, body)

    def huawei_page(self, items, q):
        """The page after the item whose id is `marker`."""
        start = 0
        if q.get("marker"):
            ids = [i["id"] for i in items]
            start = ids.index(q["marker"]) + 1 if q["marker"] in ids else len(items)
        return paged(items, start, int(q.get("limit") or 2000))

    def huawei_lb(self, lb):
        flavors = lb.get("flavors") or []
        internet = lb.get("addressType") == "internet"
        ccm = lb.get("createdBy") == "ccm"
        item = {"id": lb["id"],
                "name": f"k8s_service_{STATE['clusterId']}_default_{lb['id']}" if ccm else lb["id"],
                "description": "", "vpc_id": lb.get("vpcId") or "",
                "guaranteed": lb.get("kind") != "elb-shared",
                "provisioning_status": "ACTIVE", "operating_status": "ONLINE",
                "listeners": [{"id": f"lsn-{l['port']}"} for l in listeners(lb)],
                "eips": [{"eip_id": "eip-1", "eip_address": "203.0.113.9", "ip_version": 4}] if internet else [],
                "l4_flavor_id": "f-l4" if "l4" in flavors else "",
                "l7_flavor_id": "f-l7" if "l7" in flavors else ""}
        return item

    def huawei_listeners(self, lb):
        """Listeners as both ELB APIs list them, named as the community CCM names its own."""
        return [{"id": f"lsn-{lb['id']}-{l['port']}", "name": f"web_{l['protocol'].upper()}_{l['port']}",
                 "protocol": l["protocol"].upper(), "protocol_port": l["port"],
                 "loadbalancers": [{"id": lb["id"]}]}
                for l in (listeners(lb) if lb else [])]

    def huawei_v2_lb(self, lb):
        return {"id": lb["id"], "name": lb["id"], "description": "", "vip_subnet_id": "subnet-1",
                "vip_address": "10.0.0.9", "provider": "vlb", "provisioning_status": "ACTIVE",
                "operating_status": "ONLINE", "admin_state_up": True,
                "listeners": [{"id": f"lsn-{l['port']}"} for l in listeners(lb)],
                "publicips": [{"publicip_id": "eip-1", "publicip_address": "203.0.113.9", "ip_version": 4}]
                if lb.get("addressType") == "internet" else []}

    def huawei_v2(self, op, parts, q):
        if op == "ListLoadBalancers":
            from urllib.parse import parse_qs
            multi = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
            check_huawei_request(multi, "ListLoadbalancersRequest", "v2")
            found = [self.huawei_v2_lb(lb) for lb in lbs("huawei")
                     if lb.get("v2") and lb["id"] in multi.get("id", [])]
            body = {"loadbalancers": found}
            check_huawei(body, "ListLoadbalancersResponse", "v2")
            return self.reply(200, body)
        if op == "ShowLoadBalancer":
            lb = find("huawei", parts[-1])
            if lb is None or not lb.get("v2"):
                if faulty("neutron404"):
                    # The shared ELB's older answer: Neutron's, with no ELB code.
                    return self.reply(404, {"NeutronError": {
                        "type": "HTTPNotFound", "detail": "",
                        "message": f"Loadbalancer {parts[-1]} could not be found."}})
                return self.reply(404, {"error_code": "ELB.9800", "request_id": "r",
                                        "error_msg": "Resource could not be found."})
            body = {"loadbalancer": self.huawei_v2_lb(lb)}
            check_huawei(body, "ShowLoadbalancerResponse", "v2")
            return self.reply(200, body)
        lb = find("huawei", q.get("loadbalancer_id"))
        items = self.huawei_listeners(lb)
        body = {"listeners": items}
        check_huawei(body, "ListListenersResponse", "v2")
        return self.reply(200, body)

    # ----- Volcengine -----

    def volcengine(self, op, url, q, raw):
        if op in ("DescribeLoadBalancers", "DescribeNetworkLoadBalancers"):
            return self.volcengine_list(op, q)
        if op in ("DescribeListeners", "DescribeNLBListeners"):
            check_volcengine_request(q, f"{op}Request")
            if "LoadBalancerId" not in q:
                return self.volcengine_region_listeners(op, q)
        lb = find("volcengine", q.get("LoadBalancerId"))
        nlb = lb is not None and lb.get("kind") == "nlb"
        meta = {"RequestId": "r", "Action": op, "Version": "2020-04-01", "Service": "clb",
                "Region": STATE["region"]}
        clb_ops = ("DescribeLoadBalancerAttributes", "DescribeListeners")
        if op.endswith("Attributes") and faulty("showFails"):
            return self.reply(400, {"ResponseMetadata": dict(meta, Error={
                "Code": "OperationDenied.Unknown", "Message": "try again later"})})
        if lb is None or (op in clb_ops) == nlb:
            if STATE["fault"] == "otherNotFound":
                # Volcengine publishes no not-found code: another spelling, another status.
                return self.reply(400, {"ResponseMetadata": dict(meta, Error={
                    "Code": "InvalidParameter.LoadBalancerId", "Message": "The LoadBalancerId is invalid."})})
            return self.reply(404, {"ResponseMetadata": dict(meta, Error={
                "Code": "InvalidLoadBalancer.NotFound", "Message": "The specified load balancer does not exist."})})
        if op == "DescribeLoadBalancerAttributes":
            result = {"LoadBalancerId": lb["id"], "VpcId": lb.get("vpcId") or "",
                      "Type": "public" if lb.get("addressType") == "internet" else "private",
                      "Status": "Active", "Tags": [{"Key": "team", "Value": "platform"}],
                      "Listeners": [{"ListenerId": f"lsn-{l['port']}", "ListenerName": f"l-{l['port']}"}
                                    for l in listeners(lb)]}
            check_volcengine(result, "DescribeLoadBalancerAttributesResponse")
        elif op == "DescribeListeners":
            items = [{"ListenerId": f"lsn-{l['port']}", "ListenerName": f"l-{l['port']}",
                      "Port": l["port"], "Protocol": l["protocol"].upper(), "LoadBalancerId": lb["id"]}
                     for l in listeners(lb)]
            result = {"Listeners": items, "PageNumber": int(q.get("PageNumber", 1)),
                      "PageSize": 100, "TotalCount": len(items)}
            check_volcengine(result, "DescribeListenersResponse")
        elif op == "DescribeNetworkLoadBalancerAttributes":
            zone = {"ZoneId": "zone-a", "SubnetId": "subnet-1", "Ipv4Address": "10.0.0.5"}
            if lb.get("addressType") == "internet":
                zone.update(Ipv4EipId="eip-1", Ipv4EipAddress="203.0.113.9")
            result = {"LoadBalancerId": lb["id"], "VpcId": lb.get("vpcId") or "", "Status": "Active",
                      "ZoneMappings": [zone], "Tags": []}
            check_volcengine(result, "DescribeNetworkLoadBalancerAttributesResponse")
        elif op == "DescribeNLBListeners":
            items = [{"ListenerId": f"lsn-{l['port']}", "Port": l["port"],
                      "Protocol": l["protocol"].upper(), "LoadBalancerId": lb["id"]}
                     for l in listeners(lb)]
            result = {"Listeners": items, "NextToken": ""}
            check_volcengine(result, "DescribeNLBListenersResponse")
        else:
            return self.reply(400, {"ResponseMetadata": dict(meta, Error={"Code": "InvalidAction", "Message": op})})
        return self.reply(200, {"ResponseMetadata": meta, "Result": result})

    def volcengine_region_listeners(self, op, q):
        """The listener lists without a load balancer: every listener of the region's CLBs
        (or NLBs), each with its LoadBalancerId, paged as the SDK's request model pages."""
        nlb = op == "DescribeNLBListeners"
        if STATE["fault"] == "regionListenersDenied":
            # A policy that grants the listener list only with a LoadBalancerId.
            return self.reply(403, {"ResponseMetadata": {
                "RequestId": "r", "Action": op, "Version": "2020-04-01", "Service": "clb",
                "Region": STATE["region"],
                "Error": {"Code": "AccessDenied", "Message": "User is not authorized to perform: clb:" + op}}})
        items = [{"ListenerId": f"lsn-{lb['id']}-{l['port']}", "Port": l["port"],
                  "Protocol": l["protocol"].upper(), "LoadBalancerId": lb["id"]}
                 for lb in lbs("volcengine") if (lb.get("kind") == "nlb") == nlb
                 for l in listeners(lb)]
        meta = {"RequestId": "r", "Action": op, "Version": "2020-04-01", "Service": "clb",
                "Region": STATE["region"]}
        if nlb:
            start = int(q.get("NextToken") or 0)
            page, more = paged(items, start, int(q.get("MaxResults") or 20))
            token = str(start + len(page)) if more else ""
            if STATE["fault"] == "loop" and items:
                token = q.get("NextToken") or "1"
            result = {"Listeners": page, "NextToken": token}
            check_volcengine(result, "DescribeNLBListenersResponse")
        else:
            number = int(q.get("PageNumber") or 1)
            size = max(1, min(int(q.get("PageSize") or 10), STATE["pageSize"]))
            page, _ = paged(items, (number - 1) * size, size)
            for i in page:
                i["ListenerName"] = f"l-{i['Port']}"
            result = {"Listeners": page, "PageNumber": number, "PageSize": size,
                      "TotalCount": len(items)}
            check_volcengine(result, "DescribeListenersResponse")
        return self.reply(200, {"ResponseMetadata": meta, "Result": result})

    def volcengine_list(self, op, q):
        """The list calls the refresh makes for many load balancers at once."""
        check_volcengine_request(q, f"{op}Request")
        if faulty("listFails"):
            return self.reply(500, self.volc_error("InternalError", "internal error"))
        ids = [v for k, v in q.items() if k.startswith("LoadBalancerIds.")]
        nlb = op == "DescribeNetworkLoadBalancers"
        found = [lb for lb in lbs("volcengine") if lb["id"] in ids and (lb.get("kind") == "nlb") == nlb]
        meta = {"RequestId": "r", "Action": op, "Version": "2020-04-01", "Service": "clb",
                "Region": STATE["region"]}
        if nlb:
            start = int(q.get("NextToken") or 0)
            page, more = paged(found, start, int(q.get("MaxResults") or 20))
            items = []
            for lb in page:
                zone = {"ZoneId": "zone-a", "SubnetId": "subnet-1", "Ipv4Address": "10.0.0.5"}
                if lb.get("addressType") == "internet":
                    zone.update(Ipv4EipId="eip-1", Ipv4EipAddress="203.0.113.9")
                items.append({"LoadBalancerId": lb["id"], "VpcId": lb.get("vpcId") or "",
                              "Status": "Active", "ZoneMappings": [zone], "Tags": []})
            result = {"LoadBalancers": items, "NextToken": str(start + len(page)) if more else ""}
            check_volcengine(result, "DescribeNetworkLoadBalancersResponse")
        else:
            number = int(q.get("PageNumber") or 1)
            size = max(1, min(int(q.get("PageSize") or 10), STATE["pageSize"]))
            page, _ = paged(found, (number - 1) * size, size)
            items = [{"LoadBalancerId": lb["id"], "VpcId": lb.get("vpcId") or "",
                      "Type": "public" if lb.get("addressType") == "internet" else "private",
                      "Status": "Active", "Tags": [{"Key": "team", "Value": "platform"}]}
                     for lb in page]
            result = {"LoadBalancers": items, "PageNumber": number, "PageSize": size,
                      "TotalCount": len(found)}
            check_volcengine(result, "DescribeLoadBalancersResponse")
        return self.reply(200, {"ResponseMetadata": meta, "Result": result})

    # ----- control -----

    def control(self, method, path, raw):
        data = json.loads(raw or b"{}")
        with LOCK:
            if path == "/_mock/state":
                for k in ("loadBalancers", "region", "clusterId", "projectId"):
                    if k in data:
                        STATE[k] = data[k]
                STATE["extra"] = []
            elif path == "/_mock/listener":
                STATE["extra"].append({"id": data["id"], "port": data["port"],
                                       "protocol": data.get("protocol", "TCP"), "owner": "external"})
            elif path == "/_mock/creds":
                STATE["ak"], STATE["sk"] = data["ak"], data["sk"]
                STATE["token"] = data.get("token")
            elif path == "/_mock/fault":
                STATE["fault"], STATE["delay"] = data.get("mode"), data.get("delay", 0)
                STATE["failedOnce"] = False
            elif path == "/_mock/paging":
                STATE["pageSize"] = int(data.get("size", 100))
            elif path == "/_mock/prefix":
                STATE["prefix"] = data.get("prefix", "").rstrip("/")
            elif path == "/_mock/bulk":
                p, kind = data["provider"], data.get("kind", "clb")
                vpcs = int(data.get("vpcs", 1))
                STATE["loadBalancers"] = [lb for lb in STATE["loadBalancers"] if lb.get("provider") != p] + [
                    {"id": f"{'nlb' if kind == 'nlb' else 'lb'}-bulk-{i}", "provider": p, "kind": kind,
                     "addressType": "intranet", "vpcId": f"vpc-{1 + i % vpcs}", "createdBy": "user",
                     "listeners": [{"port": 80 + i % 1000, "protocol": "TCP", "owner": "external"}],
                     "serverGroups": [{"id": f"sgp-bulk-{i}-{g}", "type": "Instance"}
                                      for g in range(int(data.get("serverGroups", 0)))]}
                    for i in range(int(data["count"]))]
            elif path == "/_mock/reset":
                CALLS["byOperation"], CALLS["badSignatures"], CALLS["modelFailures"] = {}, 0, []
                CALLS["loadBalancersAsked"] = 0
            elif path != "/_mock/calls":
                return self.reply(404, {"error": path})
            return self.reply(200, CALLS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    # Importing the SDKs takes a while; do it before saying we listen.
    import alibabacloud_slb20140515.models, alibabacloud_nlb20220430.models  # noqa: F401
    import huaweicloudsdkelb.v3.model, volcenginesdkclb.models  # noqa: F401
    import ctyunsdk_elb20220909.apis.ctelb_show_load_balancer_api  # noqa: F401
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
