# shellcheck shell=bash
# Sourced by fetch-containerd.sh, fetch-criu.sh, fetch-wasmedge.sh and fetch-kernel.sh: a
# private apt configuration under <cache>/apt that reads Debian bookworm's (with
# bookworm-security), trixie's and sid's package lists without touching the system's apt
# sources, preferences, lists, caches or dpkg status (everything apt sees is inside
# <cache>/apt; release files are checked against Debian's archive keyring).
#
# <cache> is $LIBSHIM_CACHE, else $HOME/.cache/libshim (CMake's LIBSHIM_CONTAINERD_CACHE
# has the same default). The mirror is the one the system uses for its own release
# (override: $LIBSHIM_DEBIAN_MIRROR); bookworm-security comes from the one the system uses
# for it, else Debian's security archive (override: $LIBSHIM_DEBIAN_SECURITY_MIRROR).
# bookworm's versions are older than trixie's and sid's, so adding it changes no candidate
# the trixie/sid fetches pick. Callers hold <cache>/.fetch.lock (lock_cache) while they use
# apt_dir, since the scripts share it.

cache="${LIBSHIM_CACHE:-${HOME:-/root}/.cache/libshim}"
apt_dir="$cache/apt"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
private_apt_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The URI the system's sources use for <suite> (default: the system's own release), from
# one-line and deb822 sources.
system_mirror() {
  local codename="${1:-}"
  # shellcheck source=/dev/null
  [[ -n $codename ]] || codename="$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")"
  [[ -n $codename ]] || return 1
  local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list
               /etc/apt/sources.list.d/*.sources)
  local f
  for f in "${files[@]}"; do
    [[ -r $f ]] || continue
    if [[ $f == *.sources ]]; then
      awk -v want="$codename" '
        function flush() {
          if (types ~ /(^| )deb( |$)/ && suites ~ ("(^| )" want "( |$)") &&
              enabled != "no" && uri != "") { print uri; found = 1; exit }
          types = suites = uri = enabled = ""
        }
        /^[ \t]*$/ { flush(); next }
        /^#/ { next }
        tolower($1) == "types:"   { types = $0; sub(/^[^:]*:[ \t]*/, "", types) }
        tolower($1) == "suites:"  { suites = $0; sub(/^[^:]*:[ \t]*/, "", suites) }
        tolower($1) == "uris:"    { uri = $2 }
        tolower($1) == "enabled:" { enabled = tolower($2) }
        END { if (!found) flush() }' "$f"
    else
      sed -e 's/\[[^]]*\]//' "$f" |
        awk -v want="$codename" '$1 == "deb" && $3 == want { print $2; exit }'
    fi
  done | head -n1 | grep .
}

write_apt_config() {
  local mirror="$1" security_mirror="$2" arch
  arch="$(dpkg --print-architecture)"
  mkdir -p "$apt_dir"/{etc/sources.list.d,etc/preferences.d,etc/trusted.gpg.d,etc/auth.conf.d} \
           "$apt_dir"/{lists/partial,archives/partial,log,debs}
  : >"$apt_dir/status"
  cat >"$apt_dir/etc/sources.list" <<EOF
deb [signed-by=$keyring] $mirror bookworm main
deb [signed-by=$keyring] $security_mirror bookworm-security main
deb [signed-by=$keyring] $mirror trixie main
deb [signed-by=$keyring] $mirror sid main
EOF
  # -c is read after /etc/apt/apt.conf.d, so everything that points at system state is
  # overridden here; update hooks from the system's config are cleared.
  cat >"$apt_dir/apt.conf" <<EOF
Dir::Etc::SourceList "$apt_dir/etc/sources.list";
Dir::Etc::SourceParts "$apt_dir/etc/sources.list.d";
Dir::Etc::Preferences "$apt_dir/etc/preferences";
Dir::Etc::PreferencesParts "$apt_dir/etc/preferences.d";
Dir::Etc::Trusted "$apt_dir/etc/trusted.gpg";
Dir::Etc::TrustedParts "$apt_dir/etc/trusted.gpg.d";
Dir::Etc::netrc "$apt_dir/etc/auth.conf";
Dir::Etc::netrcparts "$apt_dir/etc/auth.conf.d";
Dir::State "$apt_dir";
Dir::State::Lists "$apt_dir/lists";
Dir::State::status "$apt_dir/status";
Dir::State::extended_states "$apt_dir/extended_states";
Dir::Cache "$apt_dir";
Dir::Cache::Archives "$apt_dir/archives";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Dir::Log "$apt_dir/log";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
APT::Sandbox::User "root";
Acquire::Languages "none";
Acquire::PDiffs "false";
Acquire::Retries "1";
Acquire::http::Timeout "30";
Acquire::https::Timeout "30";
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
EOF
}

# The most telling error/warning line apt printed, for a one-line reason.
apt_reason() {
  local log="$apt_dir/log/last.log"
  { grep -E '^(E: |W: Failed to fetch)' "$log"; grep -E '^W: ' "$log"; } 2>/dev/null |
    head -n1 | tr -s ' ' | cut -c1-240
}

update_lists() {
  apt-get -c "$apt_dir/apt.conf" -q update >"$apt_dir/log/last.log" 2>&1
}

# Makes the private apt ready to look up and download: sets `mirror`, and `apt_problem`
# to a one-line reason when it cannot be used (empty when it can) and `apt_update_note`
# to apt's first warning (a source that could not be reached still exits 0).
# shellcheck disable=SC2034  # read by the scripts that source this file
prepare_private_apt() {
  apt_problem="" apt_update_note=""
  if [[ ! -r $keyring ]]; then
    bash "$private_apt_here/install-deps.sh" >/dev/null 2>&1 || true
  fi
  mirror="${LIBSHIM_DEBIAN_MIRROR:-$(system_mirror || echo http://deb.debian.org/debian)}"
  security_mirror="${LIBSHIM_DEBIAN_SECURITY_MIRROR:-$(system_mirror bookworm-security ||
                    echo http://deb.debian.org/debian-security)}"
  if [[ ! -r $keyring ]]; then
    apt_problem="$keyring is missing (package debian-archive-keyring)"
  elif ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    apt_problem="apt-get or dpkg-deb is not installed"
  else
    write_apt_config "$mirror" "$security_mirror"
    update_lists ||
      apt_problem="apt-get update ($mirror bookworm/trixie/sid) failed: $(apt_reason)"
  fi
  apt_update_note="$(apt_reason)"
}

# The newest version of `package` in `suite` matching the regex, from the private lists.
find_version() {
  local package="$1" suite="$2" pattern="$3"
  apt-cache -c "$apt_dir/apt.conf" madison "$package" 2>/dev/null |
    awk -F'|' -v suite=" $suite/" '{ gsub(/ /, "", $2) } index($3, suite) { print $2 }' |
    grep -E "$pattern" | head -n1
}

# Downloads <spec>... (apt-get install's package=version) from <suite> with their whole
# Depends closure, without Recommends, and unpacks every .deb into <dest> (dpkg-deb -x: no
# maintainer scripts run). The private dpkg status is empty, so the closure goes all the
# way down to libc6, each package from <suite> where it has one (-t). The downloads go to
# <apt_dir>/debs/<name>, removed again on success. Prints a one-line reason and returns 1
# on failure.
fetch_closure() {
  local name="$1" suite="$2" dest="$3"
  shift 3
  local dl="$apt_dir/debs/$name" deb
  rm -rf "$dl"
  mkdir -p "$dl/partial" "$dest"
  if ! apt-get -c "$apt_dir/apt.conf" -q -y --download-only --no-install-recommends \
      -o Dir::Cache::Archives="$dl" -t "$suite" install "$@" \
      >"$apt_dir/log/last.log" 2>&1; then
    echo "apt-get download of $* and its dependencies failed: $(apt_reason)"
    return 1
  fi
  for deb in "$dl"/*.deb; do
    [[ -f $deb ]] || { echo "apt-get downloaded no .deb for $*"; return 1; }
    if ! dpkg-deb -x "$deb" "$dest" 2>"$apt_dir/log/last.log"; then
      echo "dpkg-deb -x $(basename "$deb") failed: $(tail -n1 "$apt_dir/log/last.log")"
      return 1
    fi
  done
  rm -rf "$dl"
}

# Creates <cache> and takes its lock (fd 9) so that one fetch runs at a time (several
# engineers may run the test script at once). False when <cache> cannot be created.
lock_cache() {
  mkdir -p "$cache" 2>/dev/null || return 1
  exec 9>"$cache/.fetch.lock"
  flock 9
}
