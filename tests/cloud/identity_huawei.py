"""A local stand-in for Huawei Cloud's identity services, for lbguard's tests.

It speaks what huaweicloudsdkcore's credential providers send and read
(huaweicloudsdkcore/auth/internal.py), and checks every request the way the service would
refuse it: a wrong token, IdP or agency gets the service's error. STS and IAM request bodies are
parsed, and their answers checked, with the API's own models (huaweicloudsdksts,
huaweicloudsdkiam), strictly: a field the model does not have fails (HTTP 599, counted).

  HTTPS (STS and IAM):
    POST /v5/agencies/assume-with-oidc          OIDC token -> agency credentials (STS v5)
    POST /v3.0/OS-AUTH/id-token/tokens          X-Idp-Id + id token -> X-Subject-Token
    POST /v3.0/OS-CREDENTIAL/securitytokens     that token -> temporary credentials
  HTTP (link-local services):
    PUT  /meta-data/latest/api/token            a metadata token
    GET  /openstack/latest/securitykey          the ECS agency's credentials
    POST /podidentity/credential                CCE pod identity (Authorization: the token)

  python3 identity_huawei.py --cert C --key K     prints "ports HTTPS HTTP" once listening

Control, on either server (unsigned, under /_id/):
  POST /_id/state {"ak", "sk", "token", "life": s, "idToken", "podToken", "idpId",
                   "providerUrn", "agencyUrn", "metadataTokens": bool, "agency": bool}
  POST /_id/fault {"mode": null|"throttle"|"server"|"slow", "delay": s}
  GET  /_id/calls  counts per operation, the id tokens seen, refusals
"""

import argparse
import datetime
import json
import secrets
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOCK = threading.Lock()
STATE = {
    "ak": "HWSTSAK", "sk": "hw-sts-secret", "token": "hw-security-token", "life": 3600,
    "idToken": "id-token-1", "podToken": "pod-token-1", "idpId": "cce-idp",
    "providerUrn": "iam::acct:identity-provider:cce", "agencyUrn": "iam::acct:agency:lbguard",
    "metadataTokens": True, "agency": True, "fault": None, "delay": 0,
}
CALLS = {"byOperation": {}, "idTokens": [], "refused": [], "modelFailures": []}
SUBJECT_TOKENS = set()
METADATA_TOKENS = set()


class ModelError(Exception):
    pass


def model(data, cls, where):
    """A swagger model of the SDK from JSON: attribute_map maps attribute to JSON key,
    openapi_types gives each attribute's type."""
    import importlib
    if not isinstance(data, dict):
        raise ModelError(f"{where}: expected an object for {cls.__name__}")
    by_json = {v: k for k, v in cls.attribute_map.items()}
    module = importlib.import_module(cls.__module__.rsplit(".", 1)[0])
    kwargs = {}
    for key, value in data.items():
        if key not in by_json:
            raise ModelError(f"{where}: {cls.__name__} has no field {key}")
        attr = by_json[key]
        kwargs[attr] = value_of(value, cls.openapi_types[attr], module, f"{where}.{key}")
    return cls(**kwargs)


def value_of(value, typ, module, where):
    if value is None:
        return None
    if typ.startswith("list["):
        if not isinstance(value, list):
            raise ModelError(f"{where}: expected a list")
        return [value_of(v, typ[5:-1], module, f"{where}[]") for v in value]
    checks = {"str": str, "int": int, "bool": bool, "datetime": str}
    if typ in checks:
        if not isinstance(value, checks[typ]) or (typ == "int" and isinstance(value, bool)):
            raise ModelError(f"{where}: {value!r} is not {typ}")
        return value
    return model(value, getattr(module, typ), where)


def sts(name):
    import huaweicloudsdksts.v1.model as m
    return getattr(m, name)


def iam(name):
    import huaweicloudsdkiam.v3.model as m
    return getattr(m, name)


def expiry(life):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=life)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body, headers=()):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
        for k, v in headers:
            self.send_header(k, v)
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

    def do_PUT(self):
        self.handle_any("PUT")

    def refuse(self, status, code, msg):
        with LOCK:
            CALLS["refused"].append(f"{self.path}: {code}")
        return self.reply(status, {"error_code": code, "error_msg": msg, "request_id": "r"})

    def handle_any(self, method):
        path = urlsplit(self.path).path
        raw = self.body()
        if path.startswith("/_id/"):
            return self.control(path, raw)
        routes = {
            ("POST", "/v5/agencies/assume-with-oidc"): ("https", self.assume_with_oidc),
            ("POST", "/v3.0/OS-AUTH/id-token/tokens"): ("https", self.id_token),
            ("POST", "/v3.0/OS-CREDENTIAL/securitytokens"): ("https", self.security_tokens),
            ("PUT", "/meta-data/latest/api/token"): ("http", self.metadata_token),
            ("GET", "/openstack/latest/securitykey"): ("http", self.security_key),
            ("POST", "/podidentity/credential"): ("http", self.pod_identity),
        }
        route = routes.get((method, path))
        if route is None or route[0] != self.server.scheme:
            return self.reply(404, {"error_code": "APIGW.0101", "error_msg": "The API does not exist or has not been published in the environment", "request_id": "r"})
        with LOCK:
            op = path.rsplit("/", 1)[-1]
            CALLS["byOperation"][op] = CALLS["byOperation"].get(op, 0) + 1
            fault, delay = STATE["fault"], STATE["delay"]
        if fault == "slow":
            time.sleep(delay)
        if fault == "throttle":
            return self.refuse(429, "APIGW.0308", "The throttling threshold has been reached: policy user over ratelimit,limit:10,time:1 minute")
        if fault == "server":
            return self.refuse(500, "APIGW.0203", "Backend unavailable")
        try:
            return route[1](raw)
        except ModelError as e:
            with LOCK:
                CALLS["modelFailures"].append(str(e))
            return self.reply(599, {"error": str(e)})

    def json_body(self, raw, cls=None):
        if not self.headers.get("Content-Type", "").startswith("application/json"):
            return None
        try:
            body = json.loads(raw)
        except ValueError:
            return None
        if cls is not None:
            model(body, cls, cls.__name__)
        return body

    def answer(self, status, body, cls, headers=()):
        """Sends `body` once the API's response model takes it."""
        model(body, cls, cls.__name__)
        return self.reply(status, body, headers)

    def credential(self):
        with LOCK:
            return {"access": STATE["ak"], "secret": STATE["sk"],
                    "securitytoken": STATE["token"], "expires_at": expiry(STATE["life"])}

    # ----- STS v5 -----

    def assume_with_oidc(self, raw):
        body = self.json_body(raw, sts("AssumeAgencyWithOIDCReqBody"))
        if not isinstance(body, dict):
            return self.refuse(400, "STS.0001", "the request body is not JSON")
        with LOCK:
            want = dict(STATE)
            CALLS["idTokens"].append(body.get("id_token"))
        for k in ("provider_urn", "agency_urn", "agency_session_name", "id_token"):
            if not isinstance(body.get(k), str) or not body[k]:
                return self.refuse(400, "STS.0002", f"{k} is required")
        d = body.get("duration_seconds")
        if not isinstance(d, int) or not 900 <= d <= 43200:
            return self.refuse(400, "STS.0003", "duration_seconds must be 900 to 43200")
        if body["provider_urn"] != want["providerUrn"]:
            return self.refuse(404, "STS.0004", "the identity provider does not exist")
        if body["agency_urn"] != want["agencyUrn"]:
            return self.refuse(403, "STS.0005", "the agency does not trust this identity provider")
        if body["id_token"] != want["idToken"]:
            # Quoting what it refuses, as some services do: lbguard must not repeat it.
            return self.refuse(400, "STS.0102", f"the id_token {body['id_token']} is invalid or has expired")
        c = self.credential()
        return self.answer(200, {
            "credentials": {"access_key_id": c["access"], "secret_access_key": c["secret"],
                            "security_token": c["securitytoken"], "expiration": c["expires_at"]},
            "assumed_agency": {"urn": body["agency_urn"] + ":" + body["agency_session_name"],
                               "id": "a-1:" + body["agency_session_name"]},
            "provider": body["provider_urn"], "audience": "lbguard",
            "subject_from_id_token": "system:serviceaccount:lbguard:lbguard",
        }, sts("AssumeAgencyWithOIDCResponse"))

    # ----- IAM v3.0 -----

    def id_token(self, raw):
        body = self.json_body(raw, iam("GetIdTokenRequestBody"))
        try:
            token = body["auth"]["id_token"]["id"]
        except (TypeError, KeyError):
            return self.reply(400, {"error": {"code": 400, "message": "auth.id_token.id is required", "title": "Bad Request"}})
        with LOCK:
            want = dict(STATE)
            CALLS["idTokens"].append(token)
        if self.headers.get("X-Idp-Id") != want["idpId"]:
            return self.reply(404, {"error": {"code": 404, "message": "Could not find identity provider", "title": "Not Found"}})
        if token != want["idToken"]:
            return self.reply(401, {"error": {"code": 401, "message": "The id_token is invalid.", "title": "Unauthorized"}})
        subject = "MII" + secrets.token_hex(16)
        with LOCK:
            SUBJECT_TOKENS.add(subject)
        return self.answer(201, {"token": {"expires_at": expiry(86400), "methods": ["mapped"],
                                           "issued_at": expiry(0)}},
                           iam("CreateTokenWithIdTokenResponse"), headers=[("X-Subject-Token", subject)])

    def security_tokens(self, raw):
        body = self.json_body(raw, iam("CreateTemporaryAccessKeyByTokenRequestBody"))
        try:
            ident = body["auth"]["identity"]
            token = ident["token"]["id"]
            ok = ident["methods"] == ["token"]
        except (TypeError, KeyError):
            ok, token = False, None
        if not ok:
            return self.reply(400, {"error": {"code": 400, "message": "auth.identity is malformed", "title": "Bad Request"}})
        with LOCK:
            known = token in SUBJECT_TOKENS
        if not known:
            return self.reply(401, {"error": {"code": 401, "message": "The token is invalid.", "title": "Unauthorized"}})
        return self.answer(201, {"credential": self.credential()},
                           iam("CreateTemporaryAccessKeyByTokenResponse"))

    # ----- ECS metadata, CCE pod identity -----

    def metadata_token(self, raw):
        with LOCK:
            tokens = STATE["metadataTokens"]
        if not tokens:
            return self.reply(404, "Not Found")
        if not self.headers.get("X-Metadata-Token-Ttl-Seconds", "").isdigit():
            return self.reply(400, "X-Metadata-Token-Ttl-Seconds is required")
        t = secrets.token_hex(16)
        with LOCK:
            METADATA_TOKENS.add(t)
        return self.reply(200, t)

    def security_key(self, raw):
        with LOCK:
            tokens, agency = STATE["metadataTokens"], STATE["agency"]
            known = self.headers.get("X-Metadata-Token") in METADATA_TOKENS
        if tokens and not known:
            return self.reply(401, "Unauthorized")
        if not agency:
            return self.reply(401, "Please configure Cloud Service Agency first")
        return self.reply(200, {"credential": self.credential()})

    def pod_identity(self, raw):
        with LOCK:
            want = STATE["podToken"]
            CALLS["idTokens"].append(self.headers.get("Authorization"))
        if self.headers.get("Authorization") != want:
            return self.refuse(401, "CCE.01401", f"the token {self.headers.get('Authorization')} is invalid")
        return self.reply(200, {"credential": self.credential()})

    # ----- control -----

    def control(self, path, raw):
        data = json.loads(raw or b"{}")
        with LOCK:
            if path == "/_id/state":
                STATE.update({k: v for k, v in data.items() if k in STATE})
            elif path == "/_id/fault":
                STATE["fault"], STATE["delay"] = data.get("mode"), data.get("delay", 0)
            elif path == "/_id/reset":
                CALLS.update(byOperation={}, idTokens=[], refused=[], modelFailures=[])
            elif path != "/_id/calls":
                return self.reply(404, {"error": path})
            return self.reply(200, CALLS)


def serve(scheme, ctx=None):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.scheme = scheme
    if ctx is not None:
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    args = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    # Importing the models takes a while; do it before saying we listen.
    sts("AssumeAgencyWithOIDCResponse"), iam("CreateTokenWithIdTokenResponse")
    https = serve("https", ctx)
    http = serve("http")
    print(f"ports {https} {http}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
