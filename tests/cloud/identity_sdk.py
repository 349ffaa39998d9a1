"""Gets credentials from the stand-ins (identity_alibaba_volc.py) with each cloud's own
credential provider, and prints them as JSON {"ak", "sk", "token", "provider"}.

    identity_sdk.py alibaba-chain | alibaba-ecs | volcengine-chain | volcengine-ecs

The chains are the SDKs' default providers, configured by the environment the caller sets
(ALIBABA_CLOUD_*, VOLCENGINE_*). Where the SDK does not read a variable, its provider in the
chain is built with the same value: STS's certificate (IDENTITY_CA, Tea's `ca` runtime option for
Alibaba) and STS's endpoint (IDENTITY_STS: alibabacloud-credentials 1.0.x
does not read ALIBABA_CLOUD_STS_ENDPOINT, and volcengine-python-sdk's StsOidcCredentialProvider
passes its default host over VOLCENGINE_OIDC_STS_ENDPOINT). The metadata services' fixed
addresses are pointed at IDENTITY_METADATA (host:port).
"""

import json
import os
import sys


def alibaba(case):
    from alibabacloud_credentials.provider import (DefaultCredentialsProvider, EcsRamRoleCredentialsProvider,
                                                   OIDCRoleArnCredentialsProvider)

    if case == "alibaba-ecs":
        p = EcsRamRoleCredentialsProvider(async_update_enabled=False)
        p._EcsRamRoleCredentialsProvider__metadata_service_host = os.environ["IDENTITY_METADATA"]
    else:
        p = DefaultCredentialsProvider()
        chain = p._DefaultCredentialsProvider__providers_chain
        for i, provider in enumerate(chain):
            if isinstance(provider, OIDCRoleArnCredentialsProvider):
                chain[i] = OIDCRoleArnCredentialsProvider(sts_endpoint=os.environ["IDENTITY_STS"])
                chain[i]._runtime_options["ca"] = os.environ["IDENTITY_CA"]
    c = p.get_credentials()
    return {"ak": c.get_access_key_id(), "sk": c.get_access_key_secret(),
            "token": c.get_security_token(), "provider": c.get_provider_name()}


def volcengine(case):
    from volcenginesdkcore.auth.providers import ecs_role_provider
    from volcenginesdkcore.auth.providers.default_provider import DefaultCredentialProvider
    from volcenginesdkcore.auth.providers.sts_oidc_provider import StsOidcCredentialProvider

    ecs_role_provider._IMDS_ENDPOINT = "http://" + os.environ.get("IDENTITY_METADATA", "127.0.0.1:9")
    if case == "volcengine-ecs":
        p = ecs_role_provider.EcsRoleCredentialProvider(max_retries=1)
    else:
        # The default chain, with STS's certificate trusted (the chain's own OIDC provider
        # reads the same variables; only the CA cannot come from the environment).
        p = DefaultCredentialProvider()
        p._providers[1] = StsOidcCredentialProvider(
            ca_file=os.environ["IDENTITY_CA"], host=os.environ["IDENTITY_STS"], max_retries=1)
    c = p.get_credentials()
    return {"ak": c.ak, "sk": c.sk, "token": c.session_token, "provider": c.provider_name}


def main():
    case = sys.argv[1]
    got = alibaba(case) if case.startswith("alibaba") else volcengine(case)
    print(json.dumps(got), flush=True)


if __name__ == "__main__":
    main()
