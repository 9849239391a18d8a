#!/bin/sh
# policies-configmap.sh -- writes manifests/base/policies-configmap.yaml from policies/*.yaml
# (kustomize may not read files outside manifests/, so the ConfigMap is a generated copy;
# the unit test `manifests` fails when the two differ).
#   scripts/policies-configmap.sh            (from the repository root)
set -eu
out=manifests/base/policies-configmap.yaml
{
  cat <<'HEAD'
# policies-configmap.yaml -- the packing policies of policies/, mounted at
# /etc/gpupack/policies (gpupack reloads them when the ConfigMap changes; a bad file is
# rejected and the last good set keeps serving). Generated: edit policies/ and run
# scripts/policies-configmap.sh (the unit test `manifests` checks the two agree).
apiVersion: v1
kind: ConfigMap
metadata:
  name: gpupack-policies
  namespace: gpupack-system
  labels:
    app.kubernetes.io/name: gpupack
data:
HEAD
  for f in policies/*.yaml; do
    echo "  $(basename "$f"): |"
    sed 's/^/    /; s/^    $//' "$f"
  done
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out from $(ls policies/*.yaml | wc -l) policies"
