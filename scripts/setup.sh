#!/usr/bin/env bash
# Makes this machine ready to run and test pixelbox, idempotently and quickly when nothing is
# missing. On a fresh Debian 12 machine, as root, it installs the Debian packages (Docker, gVisor's
# runsc, debootstrap), registers runsc with Docker, starts dockerd, creates .venv with the project
# installed, and builds the kernel image.
#
# Environment: PIXELBOX_SETUP_DOCKER=0 skips every Docker step (local backend only).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$repo/.venv
python=/usr/bin/python3.11
daemon_json=/etc/docker/daemon.json
dockerd_log=/var/log/pixelbox-dockerd.log
with_docker=${PIXELBOX_SETUP_DOCKER:-1}
apt_packages=(python3.11 python3.11-venv make tesseract-ocr tesseract-ocr-eng chromium fonts-dejavu-core)
[[ $with_docker == 0 ]] || apt_packages+=(docker.io runsc debootstrap)

step() { printf '==> %s\n' "$*"; }
fail() {
    printf 'setup: %s\n' "$*" >&2
    exit 1
}
need_root() { [[ $(id -u) -eq 0 ]] || fail "$1: rerun as root (sudo $0)"; }

install_packages() {
    local missing=() package
    for package in "${apt_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$package")
    done
    if ((${#missing[@]} == 0)); then
        step "Debian packages: present (${apt_packages[*]})"
        return
    fi
    need_root "installing ${missing[*]}"
    step "Debian packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
}

# Prints "changed" when it had to add or fix the runsc entry; leaves every other key alone.
merge_runsc_config() {
    "$python" - "$daemon_json" <<'EOF'
import json, pathlib, sys
path = pathlib.Path(sys.argv[1])
config = json.loads(path.read_text()) if path.exists() and path.read_text().strip() else {}
wanted = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--host-uds=all"]}
if config.get("runtimes", {}).get("runsc") != wanted:
    config.setdefault("runtimes", {})["runsc"] = wanted
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    print("changed")
EOF
}

docker_up() { docker info >/dev/null 2>&1; }
runsc_registered() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

wait_for_docker() {
    local waited=0
    until docker_up; do
        ((waited < 60)) || fail "dockerd did not answer within 60 s; see $dockerd_log"
        sleep 1
        waited=$((waited + 1))
    done
}

start_dockerd() {
    need_root "starting dockerd"
    if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
        step "dockerd: starting with systemctl"
        systemctl start docker
    else
        step "dockerd: starting (log: $dockerd_log)"
        setsid nohup dockerd >>"$dockerd_log" 2>&1 </dev/null &
    fi
    wait_for_docker
}

# dockerd rereads the runtimes of daemon.json on SIGHUP; a restart is the fallback.
reload_dockerd() {
    need_root "registering runsc with dockerd"
    local pid
    pid=$(cat /var/run/docker.pid 2>/dev/null || true)
    [[ -n $pid ]] || fail "dockerd runs without /var/run/docker.pid; restart it so it reads $daemon_json"
    step "dockerd: reloading $daemon_json"
    kill -HUP "$pid"
    sleep 1
    runsc_registered && return
    step "dockerd: restarting so it registers runsc"
    kill -TERM "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
    start_dockerd
}

setup_docker() {
    local merged
    merged=$(merge_runsc_config) || fail "could not update $daemon_json (it must be valid JSON; run as root)"
    [[ $merged != changed ]] || step "docker: runsc runtime written to $daemon_json"
    docker_up || start_dockerd
    runsc_registered || reload_dockerd
    runsc_registered || fail "dockerd still lists no runsc runtime; check $daemon_json and $dockerd_log"
    step "docker: engine up, runtimes: $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"
}

setup_venv() {
    local stamp=$venv/.pixelbox-setup-stamp wanted
    if [[ -e $venv && $(sed -n 's/^home = //p' "$venv/pyvenv.cfg" 2>/dev/null) != "$(dirname "$python")" ]]; then
        step ".venv: not made from $python (kernels run as other users must read it): recreating"
        rm -rf "$venv"
    fi
    if [[ ! -x $venv/bin/python ]]; then
        step ".venv: creating from $python"
        "$python" -m venv "$venv"
    fi
    wanted=$(sha256sum "$repo/pyproject.toml" | cut -d' ' -f1)
    if [[ $(cat "$stamp" 2>/dev/null) == "$wanted" ]]; then
        step ".venv: up to date"
        return
    fi
    step ".venv: installing pixelbox[all,dev] (editable)"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "${repo}[all,dev]" </dev/null
    echo "$wanted" >"$stamp"
}

# Local kernels run as unprivileged uids and import pixelbox from this checkout (an editable
# install), so every directory above it must be searchable and its files readable by others:
# a checkout made under a private temporary directory (mode 700) would otherwise break them.
share_checkout() {
    local dir=$repo
    if setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$repo/pixelbox/__init__.py" 2>/dev/null; then
        return
    fi
    need_root "making the checkout readable by the local backend's kernel users"
    step "checkout: letting unprivileged kernel users read $repo"
    while [[ $dir != / ]]; do
        chmod o+x "$dir"
        dir=$(dirname "$dir")
    done
    chmod -R o+rX "$repo"
}

setup_criu() {
    need_root "installing CRIU for the runc restore path"
    bash "$repo/scripts/install-criu.sh" || fail "no working CRIU: the runc restore path cannot run (see scripts/install-criu.sh)"
}

setup_image() {
    step "kernel image: checking"
    "$venv/bin/python" -m pixelbox.runtime.image build
}

main() {
    local started=$SECONDS
    install_packages
    if [[ $with_docker != 0 ]]; then setup_docker; fi
    share_checkout
    setup_venv
    if [[ $with_docker != 0 ]]; then setup_image; setup_criu; fi
    step "setup done in $((SECONDS - started)) s"
}

main "$@"
