"""Stand-ins for Alibaba Cloud's and Volcengine's identity services, on loopback (or the
address --host names, e.g. the test node's host-only bridge).

Two servers, ports printed as the first line: "ports <sts> <metadata>". They stop when stdin
closes.

STS (HTTPS, --cert/--key), both clouds' AssumeRoleWithOIDC, unsigned as the SDKs send it:
  Alibaba     GET|POST /?Action=AssumeRoleWithOIDC&Version=2015-04-01&Format=JSON&RoleArn=..
              &OIDCProviderArn=..&OIDCToken=..&RoleSessionName=..&DurationSeconds=..&Timestamp=..
              (parameters in the query or a form body); answers {"RequestId", "AssumedRoleUser",
              "Credentials": {"AccessKeyId", "AccessKeySecret", "SecurityToken", "Expiration"}}
              or STS's error shape {"RequestId", "Code", "Message"}.
  Volcengine  POST /?Action=AssumeRoleWithOIDC&Version=2018-01-01, form body RoleTrn, OIDCToken,
              RoleSessionName, DurationSeconds; answers {"ResponseMetadata", "Result":
              {"Credentials": {"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration",
              "ExpiredTime", "CurrentTime"}}} or ResponseMetadata.Error {Code, Message}.

Metadata (plain HTTP), both clouds' IMDSv2:
  PUT /latest/api/token      with X-aliyun-ecs-metadata-token-ttl-seconds (Alibaba) or
                             X-volc-ecs-metadata-token-ttl-seconds (Volcengine): a token
  Alibaba     GET /latest/meta-data/ram/security-credentials/          the role's name
              GET /latest/meta-data/ram/security-credentials/<role>    {"Code": "Success", ...}
              header X-aliyun-ecs-metadata-token (required when "imdsv2" is true)
  Volcengine  GET /volcstack/latest/iam/security_credentials?type=user&format=json   ["<role>"]
              GET /volcstack/latest/iam/security_credentials/<role>
              header X-volc-ecs-metadata-token (always required)

Control, on the STS server (JSON):
  POST /_sts/config  any of:
        "token": the OIDC token STS accepts (null: any non-empty one; "jwt": any JWT, i.e.
                 three base64url parts, as the API server's TokenRequest issues)
        "roleArn"/"roleTrn": the only role accepted (null: any)
        "ak", "sk", "sessionToken": the credentials handed out; "rotate": true appends
                 "-<n>" (the n-th issue of that cloud) to each
        "lifetime": seconds the credentials live (default 3600)
        "fault": null | "throttle" | "server" | "auth" | "html" | "slow" (STS only)
        "delay": seconds, for "slow"
        "ecsRole": the instance's role (default "EcsRole"), "imdsv2": Alibaba requires a token
        "metadataFault": null | "server" | "slow" (the metadata service)
  GET  /_sts/last    the last exchange per cloud: {"alibaba": {"token", "roleArn",
                     "providerArn", "sessionName", "durationSeconds", "method", "issued"},
                     "volcengine": {...}}, and the counts {"calls": {"alibaba/sts": n, ...}}
  POST /_sts/reset   forgets the last exchanges and counts
"""

import argparse
import base64
import json
import re
import ssl
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

LOCK = threading.Lock()
DEFAULTS = {"token": None, "roleArn": None, "roleTrn": None, "ak": "STS.ak", "sk": "sts-secret",
            "sessionToken": "sts-session-token", "rotate": False, "lifetime": 3600, "fault": None,
            "delay": 0, "ecsRole": "EcsRole", "imdsv2": False, "metadataFault": None}
STATE = dict(DEFAULTS)
LAST = {}
CALLS = {}
ISSUED = {}
IMDS_TOKENS = set()
JWT = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")


def count(what):
    CALLS[what] = CALLS.get(what, 0) + 1


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def credentials(cloud):
    """The next credentials of `cloud` and their expiry (the caller holds LOCK)."""
    n = ISSUED[cloud] = ISSUED.get(cloud, 0) + 1
    suffix = f"-{n}" if STATE["rotate"] else ""
    expires = datetime.now(timezone.utc) + timedelta(seconds=float(STATE["lifetime"]))
    # Whole seconds, as the services write them: never before the lifetime asked for.
    expires = expires.replace(microsecond=0) + timedelta(seconds=1 if expires.microsecond else 0)
    return (STATE["ak"] + suffix, STATE["sk"] + suffix, STATE["sessionToken"] + suffix, expires, n)


def token_ok(token):
    want = STATE["token"]
    if not token:
        return False
    if want is None:
        return True
    if want == "jwt":
        return bool(JWT.match(token)) and _jwt_header_ok(token)
    return token == want


def _jwt_header_ok(token):
    try:
        head = token.split(".")[0]
        head += "=" * (-len(head) % 4)
        return "alg" in json.loads(base64.urlsafe_b64decode(head))
    except ValueError:
        return False


class Base(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply(self, status, payload, content_type="application/json"):
        raw = payload if isinstance(payload, bytes) else (
            payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class Sts(Base):
    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def handle_any(self, method):
        url = urlsplit(self.path)
        raw = self.body()
        if url.path.startswith("/_sts/"):
            return self.control(url.path, raw)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        if raw and "x-www-form-urlencoded" in (self.headers.get("Content-Type") or ""):
            params.update(parse_qsl(raw.decode(), keep_blank_values=True))
        if params.get("Action") != "AssumeRoleWithOIDC":
            return self.reply(404, {"Code": "InvalidAction.NotFound", "Message": f"{method} {self.path}"})
        if params.get("Version") == "2015-04-01":
            return self.alibaba(method, params)
        if params.get("Version") == "2018-01-01" and method == "POST":
            return self.volcengine(params)
        return self.reply(400, {"Code": "InvalidVersion", "Message": str(params.get("Version"))})

    def fault(self, cloud, token):
        """An injected failure in `cloud`'s error shape, or None. The "auth" one repeats the
        token, as some services do: the client must not show it."""
        with LOCK:
            fault, delay = STATE["fault"], STATE["delay"]
        if fault == "slow":
            time.sleep(delay)
            return None
        if fault == "html":
            return self.reply(502, "<html><body>502 Bad Gateway</body></html>", "text/html")
        codes = {"throttle": (400, "Throttling.User", 429, "FlowLimitExceeded"),
                 "server": (500, "InternalError", 500, "InternalError"),
                 "auth": (400, "AuthenticationFail.OIDCToken.Invalid", 400, "InvalidOIDCToken")}
        if fault not in codes:
            return None
        a_status, a_code, v_status, v_code = codes[fault]
        message = f"injected {fault}" + (f": the token {token} is not valid" if fault == "auth" else "")
        if cloud == "alibaba":
            return self.ali_error(a_status, a_code, message)
        return self.volc_error(v_status, v_code, message)

    def ali_error(self, status, code, message):
        self.reply(status, {"RequestId": str(uuid.uuid4()), "HostId": "sts.aliyuncs.com",
                            "Code": code, "Message": message, "Recommend": ""})
        return True

    def volc_error(self, status, code, message):
        self.reply(status, {"ResponseMetadata": {
            "RequestId": str(uuid.uuid4()), "Action": "AssumeRoleWithOIDC", "Version": "2018-01-01",
            "Service": "sts", "Region": "cn-north-1", "Error": {"Code": code, "Message": message}}})
        return True

    def alibaba(self, method, p):
        with LOCK:
            count("alibaba/sts")
        if self.fault("alibaba", p.get("OIDCToken")):
            return
        for name in ("RoleArn", "OIDCProviderArn", "OIDCToken", "RoleSessionName", "Timestamp"):
            if not p.get(name):
                return self.ali_error(400, f"MissingParameter.{name}", f"{name} is mandatory")
        if p.get("Format") != "JSON":
            return self.ali_error(400, "InvalidParameter.Format", "Format must be JSON")
        if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", p["Timestamp"]):
            return self.ali_error(400, "InvalidTimeStamp.Format", p["Timestamp"])
        duration = int(p.get("DurationSeconds") or 3600)
        if not 900 <= duration <= 43200:
            return self.ali_error(400, "InvalidParameter.DurationSeconds", str(duration))
        with LOCK:
            LAST["alibaba"] = {"token": p["OIDCToken"], "roleArn": p["RoleArn"],
                               "providerArn": p["OIDCProviderArn"], "sessionName": p["RoleSessionName"],
                               "durationSeconds": duration, "method": method}
            if not token_ok(p["OIDCToken"]):
                return self.ali_error(400, "AuthenticationFail.OIDCToken.Invalid",
                                      "The OIDC token is invalid.")
            if STATE["roleArn"] not in (None, p["RoleArn"]):
                return self.ali_error(404, "EntityNotExist.Role", "The role does not exist.")
            ak, sk, token, expires, n = credentials("alibaba")
            LAST["alibaba"]["issued"] = n
        self.reply(200, {
            "RequestId": str(uuid.uuid4()),
            "AssumedRoleUser": {"Arn": p["RoleArn"] + "/" + p["RoleSessionName"],
                                "AssumedRoleId": "3000:" + p["RoleSessionName"]},
            "OIDCTokenInfo": {"Subject": "system:serviceaccount:lbguard:lbguard", "Issuer": "https://oidc"},
            "Credentials": {"AccessKeyId": ak, "AccessKeySecret": sk, "SecurityToken": token,
                            "Expiration": iso(expires)}})

    def volcengine(self, p):
        with LOCK:
            count("volcengine/sts")
        if self.fault("volcengine", p.get("OIDCToken")):
            return
        for name in ("RoleTrn", "OIDCToken", "RoleSessionName"):
            if not p.get(name):
                return self.volc_error(400, "MissingParameter", f"{name} is required")
        duration = int(p.get("DurationSeconds") or 3600)
        with LOCK:
            LAST["volcengine"] = {"token": p["OIDCToken"], "roleTrn": p["RoleTrn"],
                                  "sessionName": p["RoleSessionName"], "durationSeconds": duration,
                                  "method": "POST"}
            if not token_ok(p["OIDCToken"]):
                return self.volc_error(400, "InvalidOIDCToken", "The OIDC token is invalid.")
            if STATE["roleTrn"] not in (None, p["RoleTrn"]):
                return self.volc_error(404, "RoleNotExist", "The role does not exist.")
            ak, sk, token, expires, n = credentials("volcengine")
            LAST["volcengine"]["issued"] = n
        now = datetime.now(timezone.utc)
        self.reply(200, {
            "ResponseMetadata": {"RequestId": str(uuid.uuid4()), "Action": "AssumeRoleWithOIDC",
                                 "Version": "2018-01-01", "Service": "sts", "Region": "cn-north-1"},
            "Result": {"Credentials": {"CurrentTime": iso(now), "ExpiredTime": iso(expires),
                                       "Expiration": iso(expires), "AccessKeyId": ak,
                                       "SecretAccessKey": sk, "SessionToken": token},
                       "AssumedRoleUser": {"Trn": p["RoleTrn"] + "/" + p["RoleSessionName"],
                                           "AssumedRoleId": "1:" + p["RoleSessionName"]}}})

    def control(self, path, raw):
        with LOCK:
            if path == "/_sts/config":
                data = json.loads(raw or b"{}")
                unknown = set(data) - set(DEFAULTS)
                if unknown:
                    return self.reply(400, {"error": f"unknown keys {sorted(unknown)}"})
                STATE.update(data)
            elif path == "/_sts/reset":
                LAST.clear()
                CALLS.clear()
                ISSUED.clear()
                STATE.clear()
                STATE.update(DEFAULTS)
            elif path != "/_sts/last":
                return self.reply(404, {"error": path})
            return self.reply(200, dict(LAST, calls=dict(CALLS)))


class Metadata(Base):
    def do_PUT(self):
        self.body()
        with LOCK:
            if self.path != "/latest/api/token":
                return self.reply(404, "not found", "text/plain")
            cloud = ("alibaba" if self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds")
                     else "volcengine" if self.headers.get("X-volc-ecs-metadata-token-ttl-seconds")
                     else None)
            if cloud is None:
                return self.reply(400, "missing the token TTL header", "text/plain")
            count(f"{cloud}/imds-token")
            token = f"imds-{cloud}-{uuid.uuid4().hex}"
            IMDS_TOKENS.add(token)
        self.reply(200, token, "text/plain")

    def do_GET(self):
        url = urlsplit(self.path)
        with LOCK:
            fault, delay, role = STATE["metadataFault"], STATE["delay"], STATE["ecsRole"]
        if fault == "slow":
            time.sleep(delay)
        if fault == "server":
            return self.reply(500, "internal error", "text/plain")
        ali = "/latest/meta-data/ram/security-credentials/"
        volc = "/volcstack/latest/iam/security_credentials"
        with LOCK:
            if url.path.startswith(ali):
                count("alibaba/imds")
                token = self.headers.get("X-aliyun-ecs-metadata-token")
                if (token or STATE["imdsv2"]) and token not in IMDS_TOKENS:
                    return self.reply(401, "invalid metadata token", "text/plain")
                name = url.path[len(ali):]
                if name == "":
                    return self.reply(200, role, "text/plain")
                if name != role:
                    return self.reply(404, "not found", "text/plain")
                ak, sk, tok, expires, _ = credentials("alibaba")
                return self.reply(200, {"AccessKeyId": ak, "AccessKeySecret": sk, "SecurityToken": tok,
                                        "Expiration": iso(expires), "LastUpdated": iso(datetime.now(timezone.utc)),
                                        "Code": "Success"}, "text/plain")
            if url.path == volc or url.path.startswith(volc + "/"):
                count("volcengine/imds")
                if self.headers.get("X-volc-ecs-metadata-token") not in IMDS_TOKENS:
                    return self.reply(401, "invalid metadata token", "text/plain")
                if url.path == volc:
                    q = dict(parse_qsl(url.query))
                    if q.get("format") == "json":
                        return self.reply(200, json.dumps([role]))
                    return self.reply(200, role + "\n", "text/plain")
                if url.path[len(volc) + 1:] != role:
                    return self.reply(404, "not found", "text/plain")
                ak, sk, tok, expires, _ = credentials("volcengine")
                return self.reply(200, {"AccessKeyId": ak, "SecretAccessKey": sk, "SessionToken": tok,
                                        "ExpiredTime": iso(expires)})
        return self.reply(404, "not found", "text/plain")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--sts-port", type=int, default=0)
    ap.add_argument("--metadata-port", type=int, default=0)
    args = ap.parse_args()
    sts = ThreadingHTTPServer((args.host, args.sts_port), Sts)
    sts.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    sts.socket = ctx.wrap_socket(sts.socket, server_side=True)
    meta = ThreadingHTTPServer((args.host, args.metadata_port), Metadata)
    meta.daemon_threads = True
    threading.Thread(target=meta.serve_forever, daemon=True).start()
    print(f"ports {sts.server_address[1]} {meta.server_address[1]}", flush=True)
    # Ends with the test that started it: stdin closes when the parent goes away.
    threading.Thread(target=lambda: (sys.stdin.read(), sts.shutdown()), daemon=True).start()
    sts.serve_forever()


if __name__ == "__main__":
    main()
