#!/bin/sh
# Apply the Secret reelfarm-secrets (secret.template.yaml) with values from the environment:
#
#   REELFARM_DATABASE_URL=postgresql+psycopg2://... REELFARM_SECRET_KEY=... \
#   AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... REELFARM_METRICS_TOKEN=... \
#   deploy/k8s/apply-secret.sh [NAMESPACE]
#
# Refuses, and applies nothing, while a value is unset, empty or a placeholder, or the signing key
# is shorter than 40 characters or the metrics token than 32. The namespace defaults to reelfarm (the production overlay's).
# The filled manifest goes to kubectl on its standard input, never to a file or the terminal.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
namespace=${1:-reelfarm}
names="REELFARM_DATABASE_URL REELFARM_SECRET_KEY AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY REELFARM_METRICS_TOKEN"

refused=0
for name in $names; do
    value=$(printenv "$name" || true)
    lowered=$(printf '%s' "$value" | tr '[:upper:]' '[:lower:]')
    case "$lowered" in
        "")
            echo "apply-secret: $name is not set" >&2
            refused=1 ;;
        *change-me* | *changeme* | *placeholder* | *example* | *xxxxxxxx* | *"\${"*)
            echo "apply-secret: $name still holds a placeholder; set its real value" >&2
            refused=1 ;;
    esac
done
key=$(printenv REELFARM_SECRET_KEY || true)
if [ -n "$key" ] && [ "${#key}" -lt 40 ]; then
    echo "apply-secret: REELFARM_SECRET_KEY has ${#key} characters; it needs 40 or more" >&2
    refused=1
fi
token=$(printenv REELFARM_METRICS_TOKEN || true)
if [ -n "$token" ] && [ "${#token}" -lt 32 ]; then
    echo "apply-secret: REELFARM_METRICS_TOKEN has ${#token} characters; it needs 32 or more" >&2
    refused=1
fi
if [ "$refused" -ne 0 ]; then
    echo "apply-secret: nothing applied" >&2
    exit 1
fi

# ${NAME} -> the value as a YAML double-quoted string (backslashes and quotes escaped); awk reads
# the values from its environment, so no value passes through a shell word or a sed expression.
awk '
    function quoted(text,    out, i, c) {
        out = ""
        for (i = 1; i <= length(text); i++) {
            c = substr(text, i, 1)
            if (c == "\\" || c == "\"") out = out "\\"
            out = out c
        }
        return out
    }
    {
        line = $0
        out = ""
        while (match(line, /\$\{[A-Z_]+\}/)) {
            name = substr(line, RSTART + 2, RLENGTH - 3)
            out = out substr(line, 1, RSTART - 1) quoted(ENVIRON[name])
            line = substr(line, RSTART + RLENGTH)
        }
        print out line
    }
' "$here/secret.template.yaml" | kubectl apply --namespace "$namespace" -f -
