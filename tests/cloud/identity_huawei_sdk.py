"""Shows that identity_huawei.py speaks Huawei Cloud's protocol: huaweicloudsdkcore's own
credential providers get credentials from it. Prints one JSON object: per provider the
credentials it got, and per environment the provider the SDK's default chain picked.

  python3 identity_huawei_sdk.py --https URL --http URL --ca CA --dir DIR
"""

import argparse
import json
import logging
import os
import sys

import requests

from huaweicloudsdkcore.auth import internal, provider as p
from huaweicloudsdkcore.http.http_client import HttpClient
from huaweicloudsdkcore.http.http_config import HttpConfig

VARS = [
    "HUAWEICLOUD_OIDC_PROVIDER_URN", "HUAWEICLOUD_OIDC_AGENCY_URN", "HUAWEICLOUD_OIDC_TOKEN_FILE",
    "HUAWEICLOUD_OIDC_ID_TOKEN", "HUAWEICLOUD_OIDC_SESSION_NAME", "HUAWEICLOUD_SDK_STS_ENDPOINT",
    "HUAWEICLOUD_SDK_IDP_ID", "HUAWEICLOUD_SDK_ID_TOKEN_FILE", "HUAWEICLOUD_SDK_IAM_ENDPOINT",
    "HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_PROJECT_ID",
    "HC_CONTAINER_CREDENTIALS_FULL_URI", "HC_CONTAINER_AUTHORIZATION_TOKEN_FILE",
]


def env(values):
    for k in VARS:
        os.environ.pop(k, None)
    os.environ.update(values)
    # No profile file: the chain's profile provider must not find one.
    os.environ["HUAWEICLOUD_SDK_CREDENTIALS_FILE"] = "/nonexistent/credentials"


def got(creds):
    return {"ak": creds.ak, "sk": creds.sk, "token": creds.security_token,
            "expires": int(creds._expire_at or 0), "project": getattr(creds, "project_id", None)}


def main():
    ap = argparse.ArgumentParser()
    for a in ("--https", "--http", "--ca", "--dir"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    config = HttpConfig.get_default_config()
    config.ssl_ca_cert = args.ca
    client = HttpClient(config, None, None, logging.getLogger("sdk"))
    # The SDK's metadata address is fixed; the stand-in serves it on loopback.
    internal.MetadataAccessor._METADATA_ENDPOINT = args.http

    token_file = os.path.join(args.dir, "oidc-token")
    pod_file = os.path.join(args.dir, "pod-token")
    oidc = {"HUAWEICLOUD_OIDC_PROVIDER_URN": "iam::acct:identity-provider:cce",
            "HUAWEICLOUD_OIDC_AGENCY_URN": "iam::acct:agency:lbguard",
            "HUAWEICLOUD_OIDC_TOKEN_FILE": token_file,
            "HUAWEICLOUD_SDK_STS_ENDPOINT": args.https,
            "HUAWEICLOUD_SDK_PROJECT_ID": "p-1"}
    federated = {"HUAWEICLOUD_SDK_IDP_ID": "cce-idp", "HUAWEICLOUD_SDK_ID_TOKEN_FILE": token_file,
                 "HUAWEICLOUD_SDK_IAM_ENDPOINT": args.https, "HUAWEICLOUD_SDK_PROJECT_ID": "p-1"}
    key = {"HUAWEICLOUD_SDK_AK": "HWAKID", "HUAWEICLOUD_SDK_SK": "hw-sk", "HUAWEICLOUD_SDK_PROJECT_ID": "p-1"}
    pod = {"HC_CONTAINER_CREDENTIALS_FULL_URI": args.http + "/podidentity/credential",
           "HC_CONTAINER_AUTHORIZATION_TOKEN_FILE": pod_file}
    out = {}

    env(oidc)
    c = p.OidcStsCredentialProvider.get_basic().get_credentials()
    c.process_sts(client)
    out["oidc"] = got(c)

    env(federated)
    c = p.EnvCredentialProvider.get_basic().get_credentials()
    c.process_sts(client)
    out["federated"] = got(c)

    env({})
    out["metadata"] = got(p.MetadataCredentialProvider.get_basic().get_credentials())

    env(pod)
    out["pod"] = got(p.PodIdentityCredentialProvider.get_basic().get_credentials())

    # The default chain's choice, by the accessor it set up.
    picks = {}
    for name, values in [("all", {**pod, **key, **federated, **oidc}),
                         ("federated_key_pod", {**pod, **key, **federated}),
                         ("key_pod", {**pod, **key}),
                         ("pod", pod)]:
        env(values)
        c = p.CredentialProviderChain.get_basic().get_credentials()
        picks[name] = type(c.sts_accessor).__name__ if c.sts_accessor else "AccessKey"
    # An ECS without an agency: the metadata service refuses, the chain moves on to pod identity.
    requests.post(args.http + "/_id/state", json={"agency": False}, timeout=5)
    env(pod)
    c = p.CredentialProviderChain.get_basic().get_credentials()
    picks["pod_no_agency"] = type(c.sts_accessor).__name__
    requests.post(args.http + "/_id/state", json={"agency": True}, timeout=5)
    out["chain"] = picks
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
