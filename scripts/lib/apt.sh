# Helpers of the setup scripts (sourced): install Debian packages with apt-get when root, else
# say what is missing. `apt_updated` makes one `apt-get update` per run.
apt_updated=0

# apt_get WHY PACKAGE...: installs the packages with apt-get when root, else says what is missing.
apt_get() {
  local why=$1; shift
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $* with apt-get ($why)"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  else
    echo "setup: missing $*; install it (apt-get install $*): $why" >&2
  fi
}

# apt_install COMMAND PACKAGE WHY: installs PACKAGE when COMMAND is missing.
apt_install() {
  local command=$1 package=$2 why=$3
  if command -v "$command" >/dev/null 2>&1 || [ -x "/usr/bin/$command" ]; then return 0; fi
  apt_get "$why" "$package"
}

# apt_install_libs WHY PACKAGE...: installs the Debian library packages not yet installed.
apt_install_libs() {
  local why=$1; shift
  local wanted=() package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || wanted+=("$package")
  done
  if [ "${#wanted[@]}" != 0 ]; then apt_get "$why" "${wanted[@]}"; fi
}
