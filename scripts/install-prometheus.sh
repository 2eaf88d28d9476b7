#!/usr/bin/env bash
# Make `promtool` and `prometheus` available for Vivy's ops tests (tests/ops).
#
# Idempotent: when both are already on PATH it only reports where they are. Otherwise, as
# root on a Debian-like system, it installs Debian's `prometheus` package and makes sure the
# packaged Prometheus service is neither left running nor enabled: the tests start their own
# Prometheus on an ephemeral loopback port. CI runs this, then sets VIVY_REQUIRE_PROMETHEUS=1
# so the ops tests fail instead of skipping if the binaries are still missing.
set -euo pipefail

have_binaries() {
    command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1
}

disable_packaged_service() {
    # A booted systemd: stop and disable. Not booted (container, chroot): `disable` still
    # removes the enablement symlinks. Without systemd, stop the SysV script if it started.
    if command -v systemctl >/dev/null 2>&1; then
        if [ -d /run/systemd/system ]; then
            systemctl disable --now prometheus.service >/dev/null 2>&1 || true
        else
            systemctl disable prometheus.service >/dev/null 2>&1 || true
        fi
    fi
    if [ -x /etc/init.d/prometheus ] && [ ! -d /run/systemd/system ]; then
        /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    fi
}

if ! have_binaries; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "install-prometheus: promtool/prometheus not found and cannot install them" \
            "(need root and apt-get); install Prometheus >= 2.42 so both are on PATH" >&2
        exit 1
    fi
    # Keep maintainer scripts from starting the service during installation where the
    # invoke-rc.d policy layer is honoured; remove our policy afterwards.
    policy=/usr/sbin/policy-rc.d
    created_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        created_policy=1
    fi
    trap 'if [ "$created_policy" -eq 1 ]; then rm -f "$policy"; fi' EXIT
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    disable_packaged_service
fi

if ! have_binaries; then
    echo "install-prometheus: installation finished but promtool/prometheus are not on PATH" >&2
    exit 1
fi
echo "promtool: $(command -v promtool) ($(promtool --version 2>&1 | head -n 1))"
echo "prometheus: $(command -v prometheus)"
