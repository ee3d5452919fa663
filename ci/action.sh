#!/usr/bin/env bash
# action.sh: the steps of the mcpsandbox GitHub Action, runnable anywhere.
# It builds mcpsandbox from this checkout, makes sure a Docker engine and the
# runtime images are there, scans the server, writes the Markdown summary
# (to $GITHUB_STEP_SUMMARY when set) and SARIF, and exits with the scan's
# code (0 clean, 1 findings, 2 could not scan).
#
# Inputs, from the environment:
#   MCPSANDBOX_COMMAND   the server command, split on spaces (required)
#   MCPSANDBOX_PROBES    probes file (optional)
#   MCPSANDBOX_ARGS      more scan flags, split on spaces (optional)
#   MCPSANDBOX_FAIL_ON   critical|error|warning|note|never (default error)
#   MCPSANDBOX_OUT       directory for report.json, report.sarif, summary.md
#                        (default ./mcpsandbox-out)
#   MCPSANDBOX_CATEGORY  SARIF upload category (default: mcpsandbox/ and a
#                        slug of the command with a hash of it, so that two
#                        servers scanned in one repository keep apart)
#   MCPSANDBOX_DEFER_EXIT=1  exit 0 and leave the code in $GITHUB_OUTPUT
#                        (exit-code=N), so a later step can upload SARIF first
#
# Outputs, to $GITHUB_OUTPUT when set: exit-code, report, sarif, category.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${MCPSANDBOX_COMMAND:?set MCPSANDBOX_COMMAND to the server command}"
out="${MCPSANDBOX_OUT:-$PWD/mcpsandbox-out}"
fail_on="${MCPSANDBOX_FAIL_ON:-error}"
mkdir -p "$out"

# category names the SARIF upload: code scanning replaces the previous
# results of the same category, so each server needs its own. The slug is
# for people (each word of the command without its directories), the hash
# of the whole command keeps two commands with one slug apart.
read -r -a cmd <<<"$MCPSANDBOX_COMMAND"
category="${MCPSANDBOX_CATEGORY:-}"
if [ -z "$category" ]; then
  slug="$(for w in "${cmd[@]}"; do printf '%s-' "${w##*/}"; done | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '-' | cut -c1-40 | sed 's/^-*//; s/-*$//')"
  hash="$(printf '%s' "$MCPSANDBOX_COMMAND" | sha256sum | cut -c1-8)"
  category="mcpsandbox/${slug:+$slug-}$hash"
fi

export PATH="$PATH:/usr/local/go/bin"
make -C "$root" build >&2
if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then bash "$root/ci/docker-up.sh"; else sudo bash "$root/ci/docker-up.sh"; fi
fi
bash "$root/ci/host-deps.sh" || sudo bash "$root/ci/host-deps.sh"
"$root/bin/mcpsandbox" images build --quiet base node >&2

read -r -a extra <<<"${MCPSANDBOX_ARGS:-}"
flags=(--format json --out "$out/report.json" --report "markdown=$out/summary.md" --report "sarif=$out/report.sarif" --fail-on "$fail_on")
if [ -n "${MCPSANDBOX_PROBES:-}" ]; then flags+=(--probes "$MCPSANDBOX_PROBES"); fi

set +e
"$root/bin/mcpsandbox" scan "${flags[@]}" "${extra[@]}" -- "${cmd[@]}"
code=$?
set -e

if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$out/summary.md" ]; then
  cat "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$code"
    echo "report=$out/report.json"
    echo "sarif=$out/report.sarif"
    echo "category=$category"
  } >>"$GITHUB_OUTPUT"
fi
if [ "${MCPSANDBOX_DEFER_EXIT:-}" = 1 ]; then
  exit 0
fi
exit "$code"
