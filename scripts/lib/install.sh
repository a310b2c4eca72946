# Shared by the scripts that install Debian packages (source it; it defines
# functions only and changes no shell option):
#
#   can_be_root                 true when this user is root or has sudo
#   as_root CMD…                runs CMD as root (directly, or through sudo)
#   apt_candidate PACKAGE       true when apt can install PACKAGE (refreshing
#                               the package lists once when it cannot yet)
#   apt_install WHAT PACKAGE…   installs the packages with apt-get (through
#                               sudo when not root; the package lists are
#                               refreshed once when a package is not found).
#                               Without root or sudo, or without apt-get, it
#                               prints what is missing and the command that
#                               installs it, and returns 1.
#
# The caller names itself in $install_who (default: its file name).

can_be_root() {
    [[ "$(id -u)" == 0 ]] || command -v sudo >/dev/null 2>&1
}

as_root() {
    if [[ "$(id -u)" == 0 ]]; then
        "$@"
    else
        sudo "$@"
    fi
}

_install_say() {
    printf '%s: %s\n' "${install_who:-$(basename "$0")}" "$*" >&2
}

_apt_lists_refreshed=0
_apt_refresh() {
    [[ $_apt_lists_refreshed == 1 ]] && return 0
    _apt_lists_refreshed=1
    DEBIAN_FRONTEND=noninteractive as_root apt-get update -qq >/dev/null
}

apt_candidate() { # PACKAGE
    command -v apt-cache >/dev/null 2>&1 || return 1
    local candidate
    candidate="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')"
    if [[ -z "$candidate" || "$candidate" == "(none)" ]] && can_be_root && [[ $_apt_lists_refreshed == 0 ]]; then
        _apt_refresh || return 1
        candidate="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')"
    fi
    [[ -n "$candidate" && "$candidate" != "(none)" ]]
}

apt_install() { # WHAT PACKAGE…
    local what=$1
    shift
    local command="apt-get update && apt-get install -y $*"
    if ! command -v apt-get >/dev/null 2>&1; then
        _install_say "$what is missing, and this machine has no apt-get to install it; install $what (Debian packages: $*) and run again"
        return 1
    fi
    if ! can_be_root; then
        _install_say "$what is missing; installing it needs root or sudo, and this user ($(id -un)) is not root and has no sudo. As root, run: $command"
        return 1
    fi
    _install_say "installing $what: apt-get install $*"
    export DEBIAN_FRONTEND=noninteractive
    if as_root apt-get install -y -qq "$@" >/dev/null ||
        { _apt_refresh && as_root apt-get install -y -qq "$@" >/dev/null; }; then
        return 0
    fi
    _install_say "could not install $what with apt-get (see above); as root, run: $command"
    return 1
}
