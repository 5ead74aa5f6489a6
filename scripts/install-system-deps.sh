#!/usr/bin/env bash
# System packages the offline resources need: Debian's WordNet files (for the `wordnet` resource) and npm (for the
# demo corpus); and Chromium, in which the tests open the HTML report (tools.browser_check). Installs them with apt-get when missing and running as root; otherwise says what to install.
set -euo pipefail
need=()
[ -f /usr/share/wordnet/data.noun ] || need+=(wordnet-base wordnet-sense-index)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing system packages: ${need[*]}" >&2
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
else
  echo "warning: missing Debian packages ${need[*]}: install them (sudo apt-get install ${need[*]});" \
       "until then the resources that need them fail (make run) or their tests skip (make test; fail with" \
       "UNSTEREO_STRICT=1)" >&2
fi
