#!/bin/sh
# image-sbom.sh -- the container image's bill of materials, from Debian's own records: run by the
# Dockerfile inside the finished runtime stage, which ships the output as
# /usr/share/doc/gpupack/sbom.txt (`make image` copies it to build/sbom.txt).
#   image-sbom.sh BINARY BUILD_PACKAGES_FILE BUILD_BASE RUNTIME_BASE > sbom.txt
# BUILD_PACKAGES_FILE: "package<TAB>version" lines that the build stage wrote with dpkg-query.
# Every shared library of BINARY must belong to a Debian package: otherwise this fails.
set -eu
bin=${1:?usage: image-sbom.sh BINARY BUILD_PACKAGES_FILE BUILD_BASE RUNTIME_BASE}
buildpkgs=${2:?}
build_base=${3:-?}
runtime_base=${4:-?}

# The package that owns a library path. bookworm's /usr is merged and dpkg records some
# libraries under /lib, others under /usr/lib: try the path as ldd prints it, the file it
# resolves to, and each with /usr added or removed.
owner() {
    real=$(readlink -f "$1")
    for p in "$1" "$real"; do
        for q in "$p" "/usr$p" "${p#/usr}"; do
            o=$(dpkg -S "$q" 2>/dev/null | sed -n '1s/: .*//p')
            [ -n "$o" ] && { echo "$o"; return 0; }
        done
    done
    return 1
}

echo "# SBOM of the gpupack container image"
echo "# Made by scripts/image-sbom.sh in the image's build: dpkg-query, dpkg -S and ldd, run"
echo "# inside the runtime image; columns are separated by tabs."
echo
echo "## gpupack"
printf 'version\t%s\n' "$("$bin" --version)"
printf 'binary\t%s\tsha256:%s\n' "$bin" "$(sha256sum "$bin" | cut -d' ' -f1)"
printf 'build base\t%s\n' "$build_base"
printf 'runtime base\t%s\n' "$runtime_base"
printf 'licence\tApache-2.0 (/usr/share/doc/gpupack/LICENSE, NOTICE)\n'
printf 'other files\t%s\n' \
    "/etc/gpupack/policies/*.yaml (the shipped policies), /usr/share/gpupack/examples/ (the example cluster)"
echo
echo "## Shared libraries of $bin (ldd) and their Debian packages"
echo "# library	path	package	version"
ldd "$bin" | while read -r name arrow path rest; do
    case $arrow in
        "=>") ;;
        *) path=$name ;;                   # the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
    esac
    case $path in
        /*) ;;
        *) continue ;;                     # linux-vdso.so.1: the kernel's, no file
    esac
    pkg=$(owner "$path") || { echo "image-sbom.sh: $path ($name) belongs to no Debian package" >&2; exit 1; }
    printf '%s\t%s\t%s\t%s\n' "$(basename "$name")" "$path" "$pkg" \
        "$(dpkg-query -W -f '${Version}' "$pkg")"
done
echo
echo "## Built with (the build stage's compiler and development packages, dpkg-query)"
echo "# package	version"
cat "$buildpkgs"
echo
echo "## Debian packages installed in the image (dpkg-query -W)"
echo "# package	version	architecture	source"
dpkg-query -W -f '${Package}\t${Version}\t${Architecture}\t${source:Package}\n' | sort
