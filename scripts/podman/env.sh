# Sourced by the scripts that run podman (scripts/image, scripts/base-images): podman as root with the settings in
# this directory, whatever /etc/containers says.
podman_settings=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CONTAINERS_CONF="$podman_settings/containers.conf"
export CONTAINERS_STORAGE_CONF="$podman_settings/storage.conf"

# Re-runs the calling script as root through sudo when it is not root (podman and debootstrap need root here).
run_as_root() {
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || { echo "$0: needs root (and sudo is not installed)" >&2; exit 1; }
        # `env PATH=…`: sudo's secure_path would hide swift (the Swift image is made from it) and pip's tools.
        exec sudo env PATH="$PATH" ${APNS_DEBIAN_MIRROR:+APNS_DEBIAN_MIRROR="$APNS_DEBIAN_MIRROR"} \
            ${APNS_IMAGE_DOCKERFILE:+APNS_IMAGE_DOCKERFILE="$APNS_IMAGE_DOCKERFILE"} "$(readlink -f "$0")" "$@"
    fi
}

# Without systemd, podman logs an error for every container with a HEALTHCHECK that it cannot give a systemd timer
# (the scripts run health commands themselves) and conmon one about syslog: left out of the scripts' output.
podman() {
    command podman "$@" 2> >(grep -v -E 'unable to get systemd connection|failed to connect to syslog' >&2)
}
