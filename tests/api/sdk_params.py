"""Each API row of src/providers/data/<provider>-api.yaml against the cloud's own SDK request
models: the call (or one of its `also` calls) has a request model, and the parameter is a
field of it (a dotted name: a field of the nested model; `N`: an item of a list). Reads the rows as JSON on stdin,
prints one line per row that does not fit, exits 1 if any."""
import json
import sys


def models(provider, side):
    if provider == "alibaba":
        if side == "nlb":
            import alibabacloud_nlb20220430.models as m
        else:
            import alibabacloud_slb20140515.models as m
        return m
    if provider == "volcengine":
        # The CLB SDK holds both the CLB calls and the NLB ones (CreateNLBListener, ...).
        import volcenginesdkclb.models as m
        return m
    if provider == "huawei":
        import huaweicloudsdkelb.v3.model as m
        return m
    raise SystemExit(f"no SDK for {provider}")


def openapi_fits(m, request, name):
    """Huawei's models: the request's `body` model, then each part of the dotted name a
    field of `openapi_types` (`list[X]` read as X) naming the next part's model."""
    kind = request.openapi_types.get("body")
    parts = name.split(".")
    for i, part in enumerate(parts):
        model = getattr(m, kind, None) if kind else None
        if model is None or part not in model.openapi_types:
            return False
        kind = model.openapi_types[part]
        if kind.startswith("list["):
            kind = kind[5:-1]
    return True


def swagger_fits(m, model, name):
    """Volcengine's swagger models: each part of a dotted name is an API key of
    `attribute_map`, and `swagger_types` names the nested model of the next part."""
    for i, part in enumerate(name.split(".")):
        if part == "N":
            continue
        attrs = {v: k for k, v in model.attribute_map.items()}
        if part not in attrs:
            return False
        kind = model.swagger_types[attrs[part]]
        if kind.startswith("list["):
            kind = kind[5:-1]
        if i + 1 < len(name.split(".")):
            model = getattr(m, kind, None)
            if model is None:
                return False
    return True


def nested(name, value):
    """{'A': {'B': value}} for 'A.B'; an `N` (the API's list index, `Tag.N.Key`) makes the
    field before it a list of one: {'Tag': [{'Key': value}]}."""
    for part in reversed(name.split(".")):
        value = [value] if part == "N" else {part: value}
    return value


def fits(model, name, value):
    sent = nested(name, value)
    try:
        got = model().from_map(sent).to_map()
    except Exception:  # a field of another type
        return False
    for part in name.split("."):
        if part == "N":
            if not isinstance(got, list) or not got:
                return False
            got = got[0]
            continue
        if not isinstance(got, dict) or part not in got:
            return False
        got = got[part]
    return True


def main():
    doc = json.load(sys.stdin)
    bad = []
    for call in doc["calls"]:
        m = models(doc["provider"], call.get("controller"))
        names = [call["call"], *call.get("also", [])]
        classes = [getattr(m, f"{n}Request", None) for n in names]
        if classes[0] is None:
            bad.append(f"{call['call']}: no request model")
            continue
        for p in call.get("params", []):
            value = p["example"]
            if ".N." in p["name"]:
                # One item of a list of structures: a field of each.
                value = "x"
            if "split" in p:
                value = value.split(p["split"])
            if "part" in p:
                # One part of each entry: the API takes the entries as structures.
                value = [{} for _ in value]
            if doc["provider"] == "huawei":
                ok = any(c is not None and openapi_fits(m, c, p["name"]) for c in classes)
            elif doc["provider"] == "volcengine":
                ok = any(c is not None and swagger_fits(m, c, p["name"]) for c in classes)
            else:
                ok = any(c is not None and fits(c, p["name"], value) for c in classes)
            if not ok:
                bad.append(f"{call['call']}.{p['name']}: not a field of {names}")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


main()
