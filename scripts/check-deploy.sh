#!/usr/bin/env bash
# Checks that deploy/ agrees with the code, and exits non-zero listing every disagreement:
#  1. each `receipt-worker <command> --flag …` that deploy/ runs or shows (systemd ExecStart=, Kubernetes args:,
#     the Dockerfile's CMD and its `docker run` examples, and any `receipt-worker …` in backticks) names a command
#     and flags that `receipt-worker <command> --help` of a built binary lists;
#  2. each environment variable deploy/ sets or documents (deploy/env.example, the Kubernetes ConfigMap and env:
#     entries, systemd Environment=) is one the sources read (its name in quotes under Sources/), and each key a
#     Kubernetes manifest takes from the ConfigMap or the Secret exists there;
#  3. each metric the Grafana dashboard and the alerting rules use is one Sources/Observability registers, and the
#     probe paths the Deployment uses are ones the metrics server serves;
#  4. the worker's database role (deploy/sql/roles.sql) may read what /readyz and the queue gauges read.
#
# Usage: scripts/check-deploy.sh [--root DIR] [BINARY]
#   BINARY defaults to .build/debug/receipt-worker; DIR (default: the repository) holds deploy/ and Sources/.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="$(cd "$2" && pwd)"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) binary="$1"; shift ;;
    esac
done
binary="${binary:-$root/.build/debug/receipt-worker}"
deploy="$root/deploy"
sources="$root/Sources"

problems=()
problem() { problems+=("$1"); }

if [ ! -x "$binary" ]; then
    echo "check-deploy: no receipt-worker binary at $binary: build it (swift build) or pass its path" >&2
    exit 2
fi

# --- 1. Commands and flags ------------------------------------------------------------------------------------------

root_help="$("$binary" --help 2>&1)"
commands="$(printf '%s\n' "$root_help" | awk '/^SUBCOMMANDS:/ {on=1; next} on && /^  [a-z][a-z-]* / {print $1}')"

# Prints "file<TAB>command<TAB>flag flag …" for every invocation found in deploy/.
invocations() {
    # systemd: ExecStart= and friends.
    grep -HE '^Exec(Start|StartPre|StartPost|Reload|Stop)=' "$deploy"/systemd/* 2>/dev/null |
        sed -E 's/^([^:]*):[^=]*=/\1\t/' |
        awk -F'\t' '{ n = split($2, t, /[ \t]+/); for (i = 1; i <= n; i++) if (t[i] ~ /(^|\/)receipt-worker$/) {
                        cmd = t[i + 1]; flags = ""
                        for (j = i + 2; j <= n; j++) if (t[j] ~ /^--/) { sub(/=.*/, "", t[j]); flags = flags " " t[j] }
                        print $1 "\t" cmd "\t" flags; break } }'
    # Kubernetes: args: ["command", "--flag", …] (the image's entrypoint is the binary).
    grep -HE '^[[:space:]]*args:[[:space:]]*\[' "$deploy"/kubernetes/*.yaml 2>/dev/null |
        sed -E 's/^([^:]*):[^[]*\[/\1\t/; s/\].*$//; s/[",]/ /g' |
        awk -F'\t' '{ n = split($2, t, /[ \t]+/); cmd = ""; flags = ""
                      for (i = 1; i <= n; i++) { if (t[i] == "") continue
                          if (cmd == "") { cmd = t[i]; continue }
                          if (t[i] ~ /^--/) { sub(/=.*/, "", t[i]); flags = flags " " t[i] } }
                      if (cmd != "") print $1 "\t" cmd "\t" flags }'
    # Dockerfile: CMD ["command", …].
    grep -HE '^CMD[[:space:]]*\[' "$deploy"/docker/Dockerfile 2>/dev/null |
        sed -E 's/^([^:]*):CMD[^[]*\[/\1\t/; s/\].*$//; s/[",]/ /g' |
        awk -F'\t' '{ n = split($2, t, /[ \t]+/); cmd = ""; flags = ""
                      for (i = 1; i <= n; i++) { if (t[i] == "") continue
                          if (cmd == "") { cmd = t[i]; continue }
                          if (t[i] ~ /^--/) flags = flags " " t[i] }
                      print $1 "\t" cmd "\t" flags }'
    # `docker run … receipt-worker <command> …` examples (the image is named receipt-worker), and
    # `receipt-worker <command> …` in backticks anywhere in deploy/.
    grep -rHE 'docker run|`receipt-worker [a-z]' "$deploy" 2>/dev/null |
        awk -F: '{ file = $1; line = substr($0, length(file) + 2)
                   while (match(line, /`receipt-worker [^`]*`/)) {
                       span = substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH)
                       n = split(span, t, /[ \t]+/); flags = ""
                       for (j = 3; j <= n; j++) if (t[j] ~ /^--/) { sub(/=.*/, "", t[j]); flags = flags " " t[j] }
                       print file "\t" t[2] "\t" flags }
                   if (line !~ /docker run/) next
                   n = split(line, t, /[ \t]+/)
                   for (i = 1; i < n; i++) if (t[i] == "receipt-worker" && t[i + 1] ~ /^[a-z][a-z-]*$/) {
                       flags = ""
                       for (j = i + 2; j <= n && t[j] != "#" && t[j] != "\\"; j++)
                           if (t[j] ~ /^--/) { sub(/=.*/, "", t[j]); flags = flags " " t[j] }
                       print file "\t" t[i + 1] "\t" flags } }'
}

checked_invocations=0
while IFS=$'\t' read -r file command flags; do
    [ -n "$command" ] || continue
    checked_invocations=$((checked_invocations + 1))
    where="${file#"$root"/}"
    if ! grep -qxF -- "$command" <<<"$commands"; then
        problem "$where: \`receipt-worker $command\`: no such command (receipt-worker --help lists: $(echo $commands))"
        continue
    fi
    help="$("$binary" "$command" --help 2>&1)"
    for flag in $flags; do
        case "$flag" in --help) continue ;; esac
        if ! grep -qE -- "(^|[[ ,])${flag}([] ,=<]|$)" <<<"$help"; then
            problem "$where: \`receipt-worker $command $flag\`: receipt-worker $command --help has no $flag"
        fi
    done
done < <(invocations | sort -u)
if [ "$checked_invocations" -eq 0 ]; then
    problem "found no receipt-worker invocation in $deploy: is --root right?"
fi

# --- 2. Environment variables ---------------------------------------------------------------------------------------

# Names deploy/ sets or documents, as "file<TAB>NAME".
variables() {
    grep -HoE '^#?[A-Z][A-Z0-9_]*=' "$deploy/env.example" 2>/dev/null | sed -E 's/:#?/\t/; s/=$//'
    # ConfigMap data keys, commented-out ones included (they document a setting).
    awk '/^data:/ {on=1; next} /^[^ #]/ {on=0} on && match($0, /^  #? ?[A-Z][A-Z0-9_]*:/) {
             key = substr($0, RSTART, RLENGTH); gsub(/[ #:]/, "", key); print FILENAME "\t" key }' \
        "$deploy/kubernetes/configmap.yaml" 2>/dev/null
    # env: entries of the workloads.
    grep -HE '^[[:space:]]*- name: [A-Z][A-Z0-9_]*[[:space:]]*(#.*)?$' "$deploy"/kubernetes/*.yaml 2>/dev/null |
        sed -E 's/^([^:]*):[[:space:]]*- name: ([A-Z0-9_]*).*/\1\t\2/'
    grep -HoE '^Environment=[A-Z][A-Z0-9_]*=' "$deploy"/systemd/* 2>/dev/null |
        sed -E 's/:Environment=/\t/; s/=$//'
}

while IFS=$'\t' read -r file name; do
    where="${file#"$root"/}"
    case "$name" in
        PG[A-Z]*) continue ;;  # libpq reads these itself (PGPASSFILE, PGSSLMODE, …)
    esac
    if ! grep -rqF -- "\"$name\"" "$sources"; then
        problem "$where: $name is not read by the code (no \"$name\" under Sources/)"
    fi
done < <(variables | sort -u)

# Keys the workloads take from the ConfigMap and the Secret must exist there, and every Secret key must be used.
configmap_keys="$(awk '/^data:/ {on=1; next} /^[^ ]/ {on=0} on && match($0, /^  [A-Za-z0-9_.-]+:/) {
    key = substr($0, 3, RLENGTH - 3); print key }' "$deploy/kubernetes/configmap.yaml" 2>/dev/null)"
secret_keys="$(awk '/^(stringData|data):/ {on=1; next} /^[^ ]/ {on=0} on && match($0, /^  [A-Za-z0-9_.-]+:/) {
    key = substr($0, 3, RLENGTH - 3); print key }' "$deploy/kubernetes/secret.example.yaml" 2>/dev/null)"
references() {  # "file<TAB>kind<TAB>key" for configMapKeyRef / secretKeyRef / secret volume items
    awk '/configMapKeyRef:/ {kind = "configmap"} /secretKeyRef:/ {kind = "secret"} /secret:$/ {kind = "secret"}
         match($0, /^[[:space:]]*(- )?key: [A-Za-z0-9_.-]+/) && kind != "" {
             key = $0; sub(/.*key: /, "", key); sub(/[[:space:]#].*/, "", key); print FILENAME "\t" kind "\t" key }' \
        "$deploy"/kubernetes/*.yaml 2>/dev/null
}
used_secret_keys=""
while IFS=$'\t' read -r file kind key; do
    where="${file#"$root"/}"
    if [ "$kind" = configmap ]; then
        grep -qxF -- "$key" <<<"$configmap_keys" ||
            problem "$where: ConfigMap key $key is not in deploy/kubernetes/configmap.yaml"
    else
        used_secret_keys="$used_secret_keys $key"
        grep -qxF -- "$key" <<<"$secret_keys" ||
            problem "$where: Secret key $key is not in deploy/kubernetes/secret.example.yaml"
    fi
done < <(references | sort -u)
for key in $secret_keys; do
    case " $used_secret_keys " in
        *" $key "*) ;;
        *) problem "deploy/kubernetes/secret.example.yaml: key $key is used by no workload" ;;
    esac
done

# --- 3. Metrics and probes ------------------------------------------------------------------------------------------

observability="$sources/Observability"
metric_files=("$deploy"/grafana/*.json "$deploy"/prometheus/*.y*ml)
for file in "${metric_files[@]}"; do
    [ -f "$file" ] || continue
    where="${file#"$root"/}"
    for name in $(grep -oE 'receipt_worker_[a-z0-9_]+' "$file" | sort -u); do
        base="$name"
        if ! grep -rqF -- "\"$name\"" "$observability"; then
            base="$(printf '%s' "$name" | sed -E 's/_(bucket|count|sum)$//')"
        fi
        if [ "$base" = "$name" ] && ! grep -rqF -- "\"$name\"" "$observability"; then
            problem "$where: metric $name is not registered in Sources/Observability"
        elif [ "$base" != "$name" ] && ! grep -rqF -- "\"$base\"" "$observability"; then
            problem "$where: metric $name: $base is not registered in Sources/Observability"
        fi
    done
done
for file in "$deploy"/kubernetes/*.yaml; do
    where="${file#"$root"/}"
    for path in $(grep -oE '^[[:space:]]*path: /[a-z]+' "$file" | awk '{print $2}' | sort -u); do
        grep -rqF -- "\"$path\"" "$observability" ||
            problem "$where: probe path $path is not served by the metrics server (Sources/Observability)"
    done
done

# --- 4. Database rights of the worker role --------------------------------------------------------------------------

roles="$deploy/sql/roles.sql"
if [ -f "$roles" ]; then
    # One statement per line, comments dropped.
    grants="$(sed 's/--.*//' "$roles" | tr '\n' ' ' | tr ';' '\n' | grep -E '^[[:space:]]*GRANT[[:space:]]+SELECT')"
    for relation in receipt_schema_migrations receipt_schema_definitions receipt_queue_summary; do
        if ! grep -E "[ ,]$relation([ ,]|$)" <<<"$grants" | grep -E 'TO .*receipt_worker' >/dev/null; then
            problem "deploy/sql/roles.sql: receipt_worker may not SELECT $relation, which /readyz and the queue \
gauges read (GRANT SELECT ON $relation TO receipt_worker)"
        fi
    done
fi

# --- Verdict --------------------------------------------------------------------------------------------------------

if [ ${#problems[@]} -gt 0 ]; then
    echo "check-deploy: ${#problems[@]} problem(s) between deploy/ and the code:" >&2
    for item in "${problems[@]}"; do echo "  - $item" >&2; done
    exit 1
fi
echo "check-deploy: deploy/ agrees with the code ($checked_invocations invocations, binary $binary)"
