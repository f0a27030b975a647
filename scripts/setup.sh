#!/usr/bin/env bash
# Installs the Debian packages EdgeVision builds against. Idempotent and fast when everything is
# already installed (dpkg is asked first; apt-get runs only for what is missing).
set -euo pipefail
packages=(pkg-config zlib1g-dev libturbojpeg0-dev libspng-dev libwebp-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libfreetype-dev fonts-dejavu-core)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
