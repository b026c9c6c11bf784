#!/bin/sh
# Install tablectl on a table PC (or a pit) from this offline archive: no network needed.
#
#   sh install.sh [--pit] [--prefix /opt/tablectl] [--etc /etc/tablectl] [--no-system]
#
# --pit        the pit service's extra too (tablectl pit run)
# --prefix     where the dedicated venv goes (PREFIX/venv); default /opt/tablectl
# --etc        where the example config is put, if no config is there; default /etc/tablectl
# --no-system  no groups, systemd units or udev rules (a test, a container)
#
# Every wheel comes from this archive (pip --no-index): nothing is fetched. docs/operations.md,
# "Install".
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=/opt/tablectl
etc=/etc/tablectl
extra=""
system=yes
while [ $# -gt 0 ]; do
    case "$1" in
        --pit) extra="[pit]" ;;
        --prefix) prefix="$2"; shift ;;
        --etc) etc="$2"; shift ;;
        --no-system) system=no ;;
        *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

arch=$(uname -m)
wheels="$here/wheels/$arch"
if [ ! -d "$wheels" ]; then
    echo "install.sh: this archive has no wheels for $arch (see $here/NO-WHEEL.txt)" >&2
    exit 2
fi
(cd "$here" && sha256sum --quiet -c SHA256SUMS) || {
    echo "install.sh: the archive's files do not match SHA256SUMS" >&2
    exit 1
}
python=${PYTHON:-python3.11}
"$python" -m venv "$prefix/venv"
wheel=$(ls "$here"/tablectl-*.whl)
"$prefix/venv/bin/pip" install --quiet --no-index --find-links "$wheels" --find-links "$here" \
    "tablectl$extra @ file://$wheel"
share="$prefix/venv/share/tablectl"
install -d "$etc"
[ -e "$etc/table.toml" ] || cp "$share/config/table.example.toml" "$etc/table.toml"
[ -e "$etc/keyring.example.toml" ] || cp "$share/config/keyring.example.toml" "$etc/"
if [ -n "$extra" ] && [ ! -e "$etc/pit.toml" ]; then
    cp "$share/config/pit.example.toml" "$etc/pit.toml"
fi
if [ "$system" = yes ]; then
    # the units run as a DynamicUser= in these groups (the devices' nodes: the udev rules)
    for group in dialout plugdev; do
        getent group "$group" >/dev/null || groupadd --system "$group"
    done
    cp "$share/systemd/table-controller.service" /etc/systemd/system/
    [ -z "$extra" ] || cp "$share/systemd/tablectl-pit.service" /etc/systemd/system/
    cp "$share/systemd/99-tablectl.rules" /etc/udev/rules.d/
    udevadm control --reload 2>/dev/null || true
    systemctl daemon-reload 2>/dev/null || true
fi
"$prefix/venv/bin/tablectl" version
echo "installed in $prefix/venv; config in $etc (docs/operations.md)"
