#!/usr/bin/env bash
# Do the docs tell the truth about the code? For README.md and docs/*.md:
#   - every class or function they name (a CamelCase word of two humps or more) occurs in the
#     code, the deployment files or the tests;
#   - every file of this repository they name exists (a unit named without its extension, as
#     `router/net/gateway_links`, counts when one of its files does);
#   - every flag of the services' tables in docs/operations.md is a flag of the code, and every
#     flag of the code (ABSL_FLAG) is in docs/operations.md.
# Prints one line per problem and exits non-zero if there is any. In the test command (ctest
# check_docs).
set -euo pipefail
cd "$(dirname "$0")/.."

docs=(README.md docs/*.md)
problems=0
problem() {
  echo "check-docs: $*"
  problems=$((problems + 1))
}

# Words that look like names but are the world's, not ours: prose plurals, Kubernetes kinds,
# the SDK's error names.
not_ours='^(WebSockets|NetworkPolicies|MissingRequiredClientCapabilityError)$'

mapfile -t code < <(git ls-files gateway router authsvc common relayctl bench proto hostapi tests \
  scripts deploy compose.yml Dockerfile CMakeLists.txt | grep -E '\.(cc|h|php|mjs|js|proto|sh|ya?ml|txt)$|Dockerfile$')

# Names.
for doc in "${docs[@]}"; do
  while read -r name; do
    [[ -z $name || $name =~ $not_ours ]] && continue
    grep -qw -- "$name" "${code[@]}" || problem "$doc names $name, which is nowhere in the code"
  done < <(grep -oE '\b[A-Z][a-z0-9]+([A-Z][a-z0-9]+)+\b' "$doc" | sort -u)
done

# Files: paths that start at one of the repository's folders (not ../shared/…, not a URL's).
for doc in "${docs[@]}"; do
  while read -r path; do
    [[ -z $path ]] && continue
    if [[ $path == *'*'* ]]; then
      compgen -G "$path" >/dev/null || problem "$doc names $path, which matches no file"
    elif [[ ! -e $path ]] && ! compgen -G "$path.*" >/dev/null; then
      problem "$doc names $path, which does not exist"
    fi
  done < <(grep -oP '(?<![\w./-])(gateway|router|authsvc|common|relayctl|scripts|tests|deploy|hostapi|bench|proto|docs|\.ci)/[\w./*-]*[\w*]' "$doc" | sort -u)
done

# Flags: each of the code's in docs/operations.md (its tables, or its prose for relayctl's and
# the TLS flags every service shares); each in the first column of its tables, in the code.
mapfile -t flags < <(grep -rhoE 'ABSL_FLAG\([^,]+, *[a-z_0-9]+' gateway router authsvc common relayctl |
  sed -E 's/.*, *//' | sort -u)
for flag in "${flags[@]}"; do
  grep -qE -- "--$flag\b" docs/operations.md ||
    problem "--$flag is a flag of the code but not in docs/operations.md"
done
# A set, not `printf … | grep -q`: grep -q leaves at its first match, and under pipefail the
# SIGPIPE printf may then get made a flag the code has look missing (seen once, for --catalogue).
declare -A code_flags=()
for flag in "${flags[@]}"; do code_flags[$flag]=1; done
while read -r flag; do
  [[ -z $flag ]] && continue
  [[ -n ${code_flags[$flag]:-} ]] ||
    problem "docs/operations.md documents --$flag, which no service has"
done < <(grep -E '^\| `--' docs/operations.md | cut -d'|' -f2 | grep -oE -- '--[a-z_0-9]+' | sed 's/^--//' | sort -u)

if ((problems)); then
  echo "check-docs: $problems problems"
  exit 1
fi
echo "check-docs: ${#docs[@]} documents agree with the code (${#flags[@]} flags)"
