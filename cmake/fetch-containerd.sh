#!/usr/bin/env bash
# Fetches Debian's containerd 1.7 (trixie) and 2.1 (sid) packages into a private cache so
# the end-to-end tests can also run under those versions (tests/README.md, "multi-version").
#
#   <cache>/containerd-1.7/usr/bin/{containerd,ctr,containerd-shim-runc-v2}   1.7.24, trixie
#   <cache>/containerd-2.1/usr/bin/{containerd,ctr,containerd-shim-runc-v2}   2.1.9, sid
#   <cache>/apt/   private apt configuration, lists and downloads
#
# <cache> is $LIBSHIM_CACHE, else $HOME/.cache/libshim (CMake's LIBSHIM_CONTAINERD_CACHE
# has the same default). The mirror is the one the system uses for its own release
# (override: $LIBSHIM_DEBIAN_MIRROR). The system's apt configuration and state are only
# read, never changed: sources, preferences, lists, caches and the dpkg status apt sees
# are all inside <cache>/apt; release files are checked against Debian's archive keyring.
#
# Idempotent and quiet: a version already unpacked (and able to run) is left alone. A
# newly unpacked version prints one line; a version that cannot be had prints a one-line
# reason. Always exits 0, so a machine without network just skips those test runs.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${LIBSHIM_CACHE:-${HOME:-/root}/.cache/libshim}"
apt_dir="$cache/apt"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# label  suite   version (regex on Debian's version string)
wanted=(
  "1.7 trixie ^1\.7\.24[~+]"
  "2.1 sid ^2\.1\.9[~+]"
)

say() { echo "fetch-containerd: $*"; }

# True when <cache>/containerd-<label> holds a runnable containerd and ctr.
installed() {
  local root="$cache/containerd-$1"
  [[ -s $root/.deb-version && -x $root/usr/bin/ctr && -x $root/usr/bin/containerd-shim-runc-v2 ]] &&
    "$root/usr/bin/containerd" --version >/dev/null 2>&1
}

# The URI of the system's own Debian release, from one-line and deb822 sources.
system_mirror() {
  local codename
  # shellcheck source=/dev/null
  codename="$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")"
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
  local mirror="$1" arch
  arch="$(dpkg --print-architecture)"
  mkdir -p "$apt_dir"/{etc/sources.list.d,etc/preferences.d,etc/trusted.gpg.d,etc/auth.conf.d} \
           "$apt_dir"/{lists/partial,archives/partial,log,debs}
  : >"$apt_dir/status"
  cat >"$apt_dir/etc/sources.list" <<EOF
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

# The newest version in `suite` matching the regex, from the private lists.
find_version() {
  local suite="$1" pattern="$2"
  apt-cache -c "$apt_dir/apt.conf" madison containerd 2>/dev/null |
    awk -F'|' -v suite=" $suite/" '{ gsub(/ /, "", $2) } index($3, suite) { print $2 }' |
    grep -E "$pattern" | head -n1
}

# Downloads containerd=<version> and unpacks it to <cache>/containerd-<label>.
install_version() {
  local label="$1" version="$2"
  local dl="$apt_dir/debs/$label" root="$cache/containerd-$label"
  local stage="$root.new"
  rm -rf "$dl" "$stage"
  mkdir -p "$dl" "$stage"
  if ! (cd "$dl" && apt-get -c "$apt_dir/apt.conf" -q download "containerd=$version") \
      >"$apt_dir/log/last.log" 2>&1; then
    echo "apt-get download containerd=$version failed: $(apt_reason)"
    return 1
  fi
  local debs=("$dl"/containerd_*.deb)
  if [[ ! -f ${debs[0]} ]] || ! dpkg-deb -x "${debs[0]}" "$stage" 2>"$apt_dir/log/last.log"; then
    echo "dpkg-deb -x of containerd $version failed: $(tail -n1 "$apt_dir/log/last.log")"
    return 1
  fi
  local out
  if ! out="$("$stage/usr/bin/containerd" --version 2>&1)"; then
    echo "containerd $version does not run here: $(echo "$out" | tail -n1 | cut -c1-200)"
    return 1
  fi
  echo "$version" >"$stage/.deb-version"
  rm -rf "$root" "$dl"
  mv "$stage" "$root"
}

main() {
  local missing=() entry label suite pattern
  for entry in "${wanted[@]}"; do
    read -r label suite pattern <<<"$entry"
    installed "$label" || missing+=("$entry")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0

  if [[ ! -r $keyring ]]; then
    bash "$here/install-deps.sh" >/dev/null 2>&1 || true
  fi
  local reason=""
  local mirror="${LIBSHIM_DEBIAN_MIRROR:-$(system_mirror || echo http://deb.debian.org/debian)}"
  if [[ ! -r $keyring ]]; then
    reason="$keyring is missing (package debian-archive-keyring)"
  elif ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    reason="apt-get or dpkg-deb is not installed"
  else
    write_apt_config "$mirror"
    update_lists || reason="apt-get update ($mirror trixie/sid) failed: $(apt_reason)"
  fi
  # apt-get update exits 0 when a source cannot be reached; keep its warning for below.
  local update_note
  update_note="$(apt_reason)"

  local version why
  for entry in "${missing[@]}"; do
    read -r label suite pattern <<<"$entry"
    if [[ -n $reason ]]; then
      say "containerd $label not available: $reason"
      continue
    fi
    version="$(find_version "$suite" "$pattern")"
    if [[ -z $version ]]; then
      say "containerd $label not available: no containerd matching '$pattern' in $suite" \
          "at $mirror${update_note:+ ($update_note)}"
      continue
    fi
    if why="$(install_version "$label" "$version")"; then
      say "containerd $version ($suite) -> $cache/containerd-$label"
    else
      rm -rf "$cache/containerd-$label.new"
      say "containerd $label not available: $why"
    fi
  done
}

mkdir -p "$cache" || { say "cannot create $cache; multi-version runs will be skipped"; exit 0; }
# Several engineers may run the test script at once: one fetch at a time.
exec 9>"$cache/.fetch.lock"
flock 9
main
exit 0
