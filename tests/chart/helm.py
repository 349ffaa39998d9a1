"""Helm's own Go SDK (helm-python-sdk) for the chart tests in tests/chart/.

usage: helm.py render|lint|schema CHART_DIR VALUES_JSON [NAMESPACE]
Prints one JSON document: the rendered templates, the lint report, or the schema verdict.
Helm errors are printed as {"error": "..."} so the caller can assert on them.
"""
import json
import sys

import helm_python


def main() -> None:
    action, chart_dir, values = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    namespace = sys.argv[4] if len(sys.argv) > 4 else "lbguard-system"
    try:
        if action == "lint":
            out = helm_python.lint(chart_dir, values, strict=True, namespace=namespace, kube_version="v1.31.0")
        else:
            with helm_python.Chart.load(chart_dir) as chart:
                if action == "schema":
                    chart.validate_schema(values)
                    out = {"ok": True}
                else:
                    chart.validate_schema(values)
                    out = {"templates": chart.render(values, name="lbguard", namespace=namespace, is_install=True)}
    except helm_python.HelmError as e:
        out = {"error": str(e)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
