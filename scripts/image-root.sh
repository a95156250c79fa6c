#!/bin/sh
# image-root.sh — the root file system of predictd's OCI image, made from
# this build's binaries and files of the Debian packages installed on this
# machine (no registry, no network): the four programs (stripped), the
# shared libraries the dynamic linker resolves for them (ldd), CA certificates,
# tzdata's zone files, a passwd/group with the non-root user predictd
# (uid/gid 10001), /models and /etc/predictd. scripts/image.sh imports it.
#   scripts/image-root.sh BUILD ROOT
set -eu
BUILD=${1:?usage: image-root.sh BUILD ROOT}
ROOT=${2:?usage: image-root.sh BUILD ROOT}
BINS="predictd predictctl predict-train predict-model"
MULTIARCH=$(cc -dumpmachine)
LIBDIR=/usr/lib/$MULTIARCH

rm -rf "$ROOT"
mkdir -p "$ROOT/usr/bin" "$ROOT$LIBDIR" "$ROOT/usr/lib64" "$ROOT/etc/ssl/certs" \
    "$ROOT/usr/share" "$ROOT/models" "$ROOT/etc/predictd" "$ROOT/tmp" "$ROOT/var/lib/predictd"
# Debian's merged /usr: /bin, /lib and /lib64 are links into /usr.
ln -s usr/bin "$ROOT/bin"
ln -s usr/lib "$ROOT/lib"
ln -s usr/lib64 "$ROOT/lib64"
chmod 1777 "$ROOT/tmp"

# copy_lib PATH: the file PATH names (links followed) at its canonical
# directory inside the root, under the name PATH has (the soname the
# dynamic linker looks for).
copy_lib() {
    dir=$(cd "$(dirname "$1")" && pwd -P)
    [ -e "$ROOT$dir/$(basename "$1")" ] && return 0
    mkdir -p "$ROOT$dir"
    cp -L "$1" "$ROOT$dir/$(basename "$1")"
}
# libs_of FILE...: the libraries the dynamic linker resolves for them.
libs_of() {
    ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(0x/ { print $1 }' | sort -u
}

for b in $BINS; do
    [ -x "$BUILD/$b" ] || { echo "image-root: $BUILD/$b is missing (make bins)" >&2; exit 1; }
    strip --strip-unneeded -o "$ROOT/usr/bin/$b" "$BUILD/$b"
done
interp=$(readelf -l "$BUILD/predictd" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
mkdir -p "$ROOT$(dirname "$interp")"
cp -L "$interp" "$ROOT$LIBDIR/$(basename "$interp")"
[ -e "$ROOT$interp" ] || ln -s "$LIBDIR/$(basename "$interp")" "$ROOT$interp"

# predict-train links Open MPI but starts it only under mpirun
# (docs/distributed.md), which the image does not hold: in a container it
# trains in one process, so no MPI component or configuration is copied.
for l in $(libs_of "$BUILD/predictd" "$BUILD/predictctl" "$BUILD/predict-train" \
        "$BUILD/predict-model"); do
    copy_lib "$l"
done

# CA certificates (ca-certificates) and the zone files (tzdata).
cp -L /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/"
cp -a /usr/share/zoneinfo "$ROOT/usr/share/"
rm -rf "$ROOT/usr/share/zoneinfo/right" "$ROOT/usr/share/zoneinfo/posix"
ln -s /usr/share/zoneinfo/Etc/UTC "$ROOT/etc/localtime"

cat > "$ROOT/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
predictd:x:10001:10001:predictd:/var/lib/predictd:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat > "$ROOT/etc/group" <<'EOF'
root:x:0:
predictd:x:10001:
nogroup:x:65534:
EOF
printf 'hosts: files dns\n' > "$ROOT/etc/nsswitch.conf"
chmod 0644 "$ROOT/etc/passwd" "$ROOT/etc/group" "$ROOT/etc/nsswitch.conf"
chown 10001:10001 "$ROOT/var/lib/predictd"
