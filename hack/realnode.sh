#!/usr/bin/env bash
# A real node for the operator: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# containerd and kubelet, all inside ONE network namespace that holds only loopback and the pod
# bridge, with no route off the machine; the operator installed by `kubectl llm install` from a
# locally built image, running in pods. Where hack/sim.sh fakes nodes and pods (kwok), this runs
# containers: the image, its Deployment, in-cluster config, leader election, the embedded LWS
# webhooks behind their Service, and real startup/readiness probes of engine pods (fake-engine).
#
# Usage (as root: it makes a network namespace, mounts and cgroups, and installs packages):
#   hack/realnode.sh up        install missing Debian packages, build kubelet (cached beside the
#                              control plane) and the images, start everything, install the
#                              operator (--lws=embedded), wait until its Deployment is Available
#   hack/realnode.sh down      stop and remove everything up made
#   hack/realnode.sh run CMD…  run CMD inside the namespace with KUBECONFIG set, $RN_DIR/bin first
#                              on PATH (kubectl, kubectl-llm), REALNODE_NS and REALNODE_DIR set
#   hack/realnode.sh status    the processes and the node
#   hack/realnode.sh test [ARGS…]
#                              up, the test/realnode tests inside the namespace (ARGS go to the test
#                              binary, e.g. -test.run Leader), then down, whatever happened; the
#                              exit code is the tests' (make test-realnode)
#
# Environment:
#   RN_DIR   state directory (default <repo>/.realnode): binaries, images, pki, logs, node state
#   RN_NS    network namespace name (default kubectl-llm-rn)
#   RN_SKIP_INSTALL=1  up stops before `kubectl llm install` (an empty cluster with one node)
# One real node per machine (/run/kubectl-llm-realnode says whose): kubelet and containerd keep
# some state at fixed host paths.
#
# Containment, by construction: the namespace has lo (with the node IP 10.255.255.1/32 and the
# kubernetes Service IP 10.96.0.1/32) and the bridge rn0 (pods, 10.244.0.0/24) and nothing
# else: no veth to the host, no default route; up refuses to go on if it finds any other link or
# route. Pods get a resolv.conf naming 127.0.0.1 (their own loopback, where nothing listens).
# All iptables rules (the DNAT of 10.96.0.1:443 to the API server, since there is no
# kube-proxy, and a FORWARD DROP of anything leaving rn0) live in the namespace's own tables.
#
# Facts of this kind of machine (cgroup v1, no systemd, no CAP_SYS_RESOURCE) it encodes:
# kubelet failCgroupV1=false and cgroupDriver=cgroupfs; containerd restrict_oom_score_adj and
# SystemdCgroup=false; a non-loopback node IP; --kubelet-preferred-address-types=InternalIP; a
# bridge CNI config; the namespace is entered with `nsenter --net` only (`ip netns exec` would
# also unshare the mount namespace and remount /sys, hiding the cgroup hierarchy and making
# kubelet's tmpfs volumes invisible to containerd). kube-apiserver calls webhooks at their
# endpoints' pod IPs (--enable-aggregator-routing), as no kube-proxy serves ClusterIPs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RN_DIR=${RN_DIR:-$ROOT/.realnode}
case $RN_DIR in /*) ;; *) RN_DIR=$PWD/$RN_DIR ;; esac
NS=${RN_NS:-kubectl-llm-rn}
NODE=realnode
NODE_IP=10.255.255.1
SVC_IP=10.96.0.1
POD_CIDR=10.244.0.0/24
API_PORT=6443
API=127.0.0.1:$API_PORT
CNI_NET=kubectl-llm-rn
SOCK=$RN_DIR/containerd/containerd.sock
PKI=$RN_DIR/pki
LOGS=$RN_DIR/logs
KCFG=$RN_DIR/admin.kubeconfig
OWNER=/run/kubectl-llm-realnode # which RN_DIR the machine's one real node belongs to

log() { echo "[realnode $(date +%T.%3N)] $*" >&2; }
die() { log "$*"; exit 1; }
elapsed() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN{printf "%.1fs", t1-t0}'; }
IN() { nsenter --net="/run/netns/$NS" "$@"; }
kubectl() { IN "$BIN/kubectl" --kubeconfig "$KCFG" "$@"; }
ctr() { IN /usr/bin/ctr --address "$SOCK" --namespace k8s.io "$@"; }

# alive PID: exists and is not a zombie (our daemons are reparented to PID 1, which may take a
# moment to reap them).
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# start NAME CMD…: run CMD in the namespace, in the background, logging to $LOGS/NAME.log.
# `9>&-`: daemons must not keep up's lock.
start() {
  local name=$1; shift
  setsid nsenter --net="/run/netns/$NS" "$@" >"$LOGS/$name.log" 2>&1 9>&- </dev/null &
  echo $! >"$RN_DIR/pids/$name.pid"
}

# wait_for SECONDS WHAT CMD…: poll CMD until it succeeds.
wait_for() {
  local secs=$1 what=$2 t0=$SECONDS; shift 2
  until "$@" >/dev/null 2>&1; do
    [ $((SECONDS - t0)) -lt "$secs" ] || { log "timed out after ${secs}s waiting for $what"; return 1; }
    sleep 0.2
  done
}

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (network namespace, mounts, cgroups)"; }

# Debian packages: containerd (and its ctr), runc, the CNI plugins, iptables, iproute2, util-linux
# (nsenter), openssl.
packages() {
  local missing=() p
  for p in containerd:/usr/bin/containerd runc:/usr/sbin/runc containernetworking-plugins:/usr/lib/cni/bridge \
    iptables:/usr/sbin/iptables iproute2:/usr/sbin/ip util-linux:/usr/bin/nsenter openssl:/usr/bin/openssl; do
    [ -x "${p#*:}" ] || missing+=("${p%%:*}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get -o DPkg::Lock::Timeout=300 update >&2 && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "${missing[@]}" >&2; } ||
    die "apt-get install ${missing[*]} failed"
}

# The operator binary as the release builds it (.goreleaser.yaml: CGO_ENABLED=0, -trimpath,
# -s -w, the version stamps), fake-engine and pause; then their images.
images() {
  local t0 commit date ld
  t0=$(date +%s.%N)
  mkdir -p "$RN_DIR/bin" "$RN_DIR/img"
  commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  date=$(git -C "$ROOT" log -1 --format=%cI 2>/dev/null || echo unknown)
  ld="-s -w -X github.com/kubectl-llm/kubectl-llm/pkg/cli.commit=$commit -X github.com/kubectl-llm/kubectl-llm/pkg/cli.date=$date"
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags="$ld" -o "$RN_DIR/bin/kubectl-llm" ./cmd/kubectl-llm &&
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$RN_DIR/bin/fake-engine" ./test/fake-engine &&
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$RN_DIR/bin/pause" ./test/realnode/pause &&
    CGO_ENABLED=0 go build -o "$RN_DIR/bin/mkimage" ./hack/mkimage) || die "go build failed"
  local mk=$RN_DIR/bin/mkimage
  "$mk" --ref localhost/kubectl-llm:dev --dockerfile "$ROOT/hack/release/Dockerfile" \
    --file "/kubectl-llm=$RN_DIR/bin/kubectl-llm" --out "$RN_DIR/img/kubectl-llm.tar"
  # /vllm: fake-engine reads a `vllm serve MODEL --port N …` command line when run by that name.
  "$mk" --ref localhost/fake-engine:dev --entrypoint /fake-engine --user 65532:65532 \
    --file "/fake-engine=$RN_DIR/bin/fake-engine" --file "/vllm=$RN_DIR/bin/fake-engine" --out "$RN_DIR/img/fake-engine.tar"
  "$mk" --ref localhost/pause:dev --entrypoint /pause --user 65535:65535 --file "/pause=$RN_DIR/bin/pause" --out "$RN_DIR/img/pause.tar"
  log "binaries and images built in $(elapsed "$t0")"
}

netns() {
  # ip netns add makes /run/netns (a shared bind mount) when it is missing: remember to undo that.
  [ -d /run/netns ] || touch "$RN_DIR/.made-run-netns"
  ls /run/netns >"$RN_DIR/netns-before" 2>/dev/null || true
  ip netns add "$NS"
  IN ip link set lo up
  IN ip addr add "$NODE_IP/32" dev lo # kubelet refuses a loopback node IP
  IN ip addr add "$SVC_IP/32" dev lo  # with no default route, connect(10.96.0.1) is ENETUNREACH before the DNAT
  IN ip link add rn0 type bridge
  IN ip link set rn0 up
  IN sysctl -qw net.ipv4.conf.rn0.route_localnet=1 # pod traffic may be DNATed to 127.0.0.1
  IN iptables -I FORWARD 1 -i rn0 ! -o rn0 -j DROP
  IN iptables -t nat -I OUTPUT 1 -d "$SVC_IP" -p tcp --dport 443 -j DNAT --to-destination "$API"
  IN iptables -t nat -I PREROUTING 1 -s "$POD_CIDR" -d "$SVC_IP" -p tcp --dport 443 -j DNAT --to-destination "$API"
  check_contained
}

# check_contained (before any pod exists): lo and rn0 are the only links; no route has a
# gateway, a default, or a device other than lo/rn0. test/realnode checks it again with pods.
check_contained() {
  local bad
  bad=$(IN ip -o link | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -vxE 'lo|rn0' || true)
  [ -z "$bad" ] || die "unexpected link in $NS: $bad"
  local f
  for f in -4 -6; do
    bad=$(IN ip $f route show table all | grep -E ' via |^default|^unicast' || true)
    [ -z "$bad" ] || die "unexpected route in $NS: $bad"
    bad=$(IN ip $f route show table all | grep -oE 'dev [^ ]+' | sort -u | grep -vxE 'dev (lo|rn0)' || true)
    [ -z "$bad" ] || die "route through another device in $NS: $bad"
  done
}

pki() {
  mkdir -p "$PKI"
  (
    cd "$PKI"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=kubectl-llm-realnode-ca"
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver"
    printf 'subjectAltName=IP:127.0.0.1,IP:%s,IP:%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' \
      "$SVC_IP" "$NODE_IP" >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 30 -extfile apiserver.ext
    # admin: the cluster's admin, and the API server's client certificate to kubelets
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=kubectl-llm-admin"
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 30 -extfile client.ext
    # the kubelet as the Node authorizer and NodeRestriction expect it
    openssl req -newkey rsa:2048 -nodes -keyout kubelet.key -out kubelet.csr -subj "/O=system:nodes/CN=system:node:$NODE"
    openssl x509 -req -in kubelet.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet.crt -days 30 -extfile client.ext
    openssl genrsa -out sa.key 2048
    openssl rsa -in sa.key -pubout -out sa.pub
  ) >/dev/null 2>&1 || die "making certificates failed"
  kubeconfig admin >"$KCFG"
  kubeconfig kubelet >"$RN_DIR/kubelet.kubeconfig"
}

kubeconfig() {
  cat <<K
apiVersion: v1
kind: Config
clusters:
- name: realnode
  cluster: {server: "https://$API", certificate-authority: "$PKI/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$PKI/$1.crt", client-key: "$PKI/$1.key"}
contexts:
- name: realnode
  context: {cluster: realnode, user: $1}
current-context: realnode
K
}

containerd_up() {
  mkdir -p "$RN_DIR/containerd" "$RN_DIR/cni/net.d"
  cat >"$RN_DIR/containerd/config.toml" <<T
version = 2
root = "$RN_DIR/containerd/root"
state = "$RN_DIR/containerd/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:dev"
  disable_apparmor = true
  # No CAP_SYS_RESOURCE here: a negative oom_score_adj fails every sandbox in runc.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RN_DIR/cni/net.d"
T
  cat >"$RN_DIR/cni/net.d/10-$CNI_NET.conflist" <<T
{"cniVersion": "0.4.0", "name": "$CNI_NET", "plugins": [
  {"type": "bridge", "bridge": "rn0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$RN_DIR/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
T
  start containerd /usr/bin/containerd --config "$RN_DIR/containerd/config.toml"
  wait_for 30 containerd ctr version || die "containerd did not start: $(tail -5 "$LOGS/containerd.log")"
  local i
  for i in kubectl-llm fake-engine pause; do
    ctr images import "$RN_DIR/img/$i.tar" >/dev/null || die "ctr images import $i.tar failed"
  done
}

control_plane() {
  start etcd "$BIN/etcd" --name=realnode --data-dir="$RN_DIR/etcd" \
    --listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
    --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
    --initial-cluster=realnode=http://127.0.0.1:2380 --unsafe-no-fsync=true
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --endpoint-reconciler-type=none --secure-port=$API_PORT \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --kubelet-client-certificate="$PKI/admin.crt" --kubelet-client-key="$PKI/admin.key" \
    --kubelet-preferred-address-types=InternalIP --enable-aggregator-routing=true \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=Node,RBAC --allow-privileged=true --profiling=false \
    --enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement,PodSecurity,Priority
  wait_for 90 kube-apiserver kubectl get --raw /readyz || die "kube-apiserver not ready: $(tail -5 "$LOGS/kube-apiserver.log")"
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KCFG" --controllers='*' \
    --leader-elect=false --secure-port=0 --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key"
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KCFG" --leader-elect=false --secure-port=0
}

kubelet_up() {
  mkdir -p "$RN_DIR/kubelet/pods"
  echo 'nameserver 127.0.0.1' >"$RN_DIR/pod-resolv.conf" # the pod's own loopback: no DNS answers, none leaves
  cat >"$RN_DIR/kubelet/config.yaml" <<T
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$SOCK
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $PKI/ca.crt}}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
clusterDNS: [127.0.0.1]
resolvConf: $RN_DIR/pod-resolv.conf
staticPodPath: $RN_DIR/kubelet/pods
enforceNodeAllocatable: []
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
T
  start kubelet "$BIN/kubelet" --config="$RN_DIR/kubelet/config.yaml" --kubeconfig="$RN_DIR/kubelet.kubeconfig" \
    --root-dir="$RN_DIR/kubelet/root" --cert-dir="$RN_DIR/kubelet/pki" --hostname-override=$NODE --node-ip=$NODE_IP
  wait_for 60 "node $NODE" kubectl get node $NODE || die "node $NODE never registered: $(tail -5 "$LOGS/kubelet.log")"
  kubectl wait --for=condition=Ready node/$NODE --timeout=60s >/dev/null || die "node $NODE not Ready"
  wait_for 60 "the default ServiceAccount" kubectl -n default get serviceaccount default || die "no default ServiceAccount"
}

install_operator() {
  IN env KUBECONFIG="$KCFG" "$RN_DIR/bin/kubectl-llm" install --lws=embedded --image localhost/kubectl-llm:dev >&2 ||
    die "kubectl llm install failed"
  kubectl -n kubectl-llm-system wait --for=condition=Available deployment/kubectl-llm-operator --timeout=180s >&2 || {
    kubectl -n kubectl-llm-system get pods -o wide >&2 || true
    die "the operator Deployment is not Available"
  }
}

up() {
  need_root
  local t0
  t0=$(date +%s.%N)
  mkdir -p "$RN_DIR"
  exec 9>>"$RN_DIR/.lock"
  flock -n 9 || die "another hack/realnode.sh holds $RN_DIR/.lock"
  [ ! -e "/run/netns/$NS" ] || die "network namespace $NS exists: run hack/realnode.sh down first"
  # One real node per machine: kubelet and containerd keep state at fixed host paths
  # (/var/lib/kubelet, /run/containerd, the kubepods cgroups) that a second one would share.
  local odir ons
  if read -r odir ons 2>/dev/null <"$OWNER" && [ "$odir" != "$RN_DIR" ] && [ -e "/run/netns/$ons" ]; then
    die "another real node runs on this machine (RN_DIR=$odir, RN_NS=$ons): its down first (it shares kubelet's host paths)"
  fi
  echo "$RN_DIR $NS" >"$OWNER"
  packages
  BIN=$(bash "$ROOT/hack/build-control-plane.sh" kubelet) || die "hack/build-control-plane.sh kubelet failed"
  images
  rm -rf "$RN_DIR/pids" "$LOGS" "$PKI" "$RN_DIR/etcd" "$RN_DIR/containerd" "$RN_DIR/cni" "$RN_DIR/kubelet"
  mkdir -p "$RN_DIR/pids" "$LOGS"
  echo "$BIN" >"$RN_DIR/bin-dir"
  ln -sf "$BIN/kubectl" "$RN_DIR/bin/kubectl"
  local t1
  t1=$(date +%s.%N)
  trap 'log "up failed; the logs are in $LOGS; hack/realnode.sh down removes what was made"' ERR
  netns
  log "namespace $NS: lo and rn0 only, no route out"
  pki
  containerd_up
  log "containerd up, images imported ($(elapsed "$t1"))"
  control_plane
  kubelet_up
  log "node $NODE Ready ($(elapsed "$t1") after the builds)"
  if [ "${RN_SKIP_INSTALL:-}" != 1 ]; then
    install_operator
    log "operator Available ($(elapsed "$t1") after the builds)"
  fi
  trap - ERR
  log "up in $(elapsed "$t0"); hack/realnode.sh run kubectl get pods -A"
  echo "$KCFG"
}

# stop NAME: SIGTERM, up to 10 s, then SIGKILL.
stop() {
  local f=$RN_DIR/pids/$1.pid p i
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  kill "$p" 2>/dev/null || true
  for i in $(seq 100); do alive "$p" || break; sleep 0.1; done
  if alive "$p"; then log "$1 (pid $p) ignored SIGTERM for 10s: SIGKILL"; kill -9 "$p" 2>/dev/null || true; fi
  rm -f "$f"
}

down() {
  need_root
  local t0 p m n
  t0=$(date +%s.%N)
  [ -d "$RN_DIR" ] || { log "nothing in $RN_DIR"; return 0; }
  BIN=$(cat "$RN_DIR/bin-dir" 2>/dev/null || true)
  # 1. let kubelet tear the pods down (CNI DEL, unmounts) while it still runs
  if [ -e "/run/netns/$NS" ] && [ -f "$RN_DIR/pids/kubelet.pid" ] && [ -n "$BIN" ]; then
    kubectl delete namespace kubectl-llm-system --ignore-not-found --wait=false >/dev/null 2>&1 || true
    kubectl delete deployments,statefulsets,leaderworkersets.leaderworkerset.x-k8s.io,pods --all --all-namespaces \
      --wait=true --timeout=60s >/dev/null 2>&1 || true
  fi
  stop kubelet
  # 2. what is left of the containers, then containerd (the shims exit with their tasks)
  if [ -S "$SOCK" ] && [ -e "/run/netns/$NS" ]; then
    for p in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$p" >/dev/null 2>&1 || true; done
    sleep 0.5
    for p in $(ctr tasks ls -q 2>/dev/null); do ctr tasks rm -f "$p" >/dev/null 2>&1 || true; done
    for p in $(ctr containers ls -q 2>/dev/null); do ctr containers rm "$p" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  for p in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$p"; done
  # 3. anything still in our namespace was started by it (an orphaned shim, say): by pid
  if [ -e "/run/netns/$NS" ]; then
    for p in $(ip netns pids "$NS" 2>/dev/null); do
      log "left over in $NS: pid $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
      kill -9 "$p" 2>/dev/null || true
    done
  fi
  # 4. mounts under the state directory (rootfs overlays, pod volumes), the pods' namespaces
  #    that appeared since up, then ours
  for m in $(awk -v r="$RN_DIR/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m" || true; done
  for n in /run/netns/cni-*; do
    [ -e "$n" ] || continue
    n=${n#/run/netns/}
    grep -qxF "$n" "$RN_DIR/netns-before" 2>/dev/null && continue
    umount "/run/netns/$n" 2>/dev/null || true
    rm -f "/run/netns/$n"
  done
  [ ! -e "/run/netns/$NS" ] || ip netns del "$NS"
  if [ -f "$RN_DIR/.made-run-netns" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    mountpoint -q /run/netns && umount /run/netns
    rmdir /run/netns 2>/dev/null || true
  fi
  # 5. what kubelet, containerd and the CNI plugins keep at fixed host paths: the kubepods cgroups
  #    (deepest first), pod logs, CNI results of our network, runc state, the device-plugin socket
  for m in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$m" ] && find "$m" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  rm -rf /var/log/pods /var/log/containers
  rm -f /var/lib/cni/results/"$CNI_NET"-* 2>/dev/null || true
  rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet/plugins_registry /var/lib/kubelet/plugins /var/lib/kubelet 2>/dev/null || true
  rm -rf /run/containerd/runc/k8s.io /run/containerd/io.containerd.runtime.v2.task/k8s.io 2>/dev/null || true
  rmdir /run/containerd/runc /run/containerd/fifo /run/containerd/s /run/containerd/io.containerd.runtime.v2.task /run/containerd 2>/dev/null || true
  rm -rf "$RN_DIR/pids" "$RN_DIR/etcd" "$RN_DIR/containerd" "$RN_DIR/cni" "$RN_DIR/kubelet" "$PKI" \
    "$KCFG" "$RN_DIR/kubelet.kubeconfig" "$RN_DIR/netns-before" "$RN_DIR/.made-run-netns" "$RN_DIR/bin-dir" "$RN_DIR/pod-resolv.conf"
  leftovers
  local odir
  if read -r odir _ 2>/dev/null <"$OWNER" && [ "$odir" = "$RN_DIR" ]; then rm -f "$OWNER"; fi
  log "down in $(elapsed "$t0")"
}

# leftovers: fail when anything up makes is still there.
leftovers() {
  local bad=()
  [ ! -e "/run/netns/$NS" ] || bad+=("netns $NS")
  [ -z "$(awk -v r="$RN_DIR/" 'index($2, r) == 1' /proc/mounts)" ] || bad+=("mounts under $RN_DIR")
  compgen -G "/sys/fs/cgroup/*/kubepods" >/dev/null && bad+=("kubepods cgroups")
  local pid cmd
  for pid in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$pid/cmdline") || continue # gone meanwhile
    case $cmd in *"$RN_DIR/"*) alive "${pid#/proc/}" && bad+=("process ${pid#/proc/}: $cmd") ;; esac
  done
  [ ${#bad[@]} -eq 0 ] || die "left behind: ${bad[*]}"
}

test_tier() {
  need_root
  local t0 rc=0
  t0=$(date +%s.%N)
  mkdir -p "$RN_DIR/bin"
  # Compiled outside the namespace: go may need the module proxy, which is unreachable inside.
  (cd "$ROOT" && go test -c -o "$RN_DIR/bin/realnode.test" ./test/realnode) || die "go test -c ./test/realnode failed"
  [ ! -e "/run/netns/$NS" ] || down
  if (up) >/dev/null; then # a subshell: a failing up exits it, not the tier (down still runs)
    log "running test/realnode"
    nsenter --net="/run/netns/$NS" env KUBECONFIG="$KCFG" PATH="$RN_DIR/bin:$PATH" REALNODE_NS="$NS" REALNODE_DIR="$RN_DIR" \
      "$RN_DIR/bin/realnode.test" -test.v -test.timeout 20m "$@" || rc=$?
  else
    rc=1
  fi
  # up's lock is ours: down takes no lock; keep the logs of a failed run.
  if [ "$rc" != 0 ] && [ -d "$LOGS" ]; then rm -rf "$RN_DIR/failed-logs"; cp -r "$LOGS" "$RN_DIR/failed-logs"; log "component logs kept in $RN_DIR/failed-logs"; fi
  down || rc=1
  log "real-node tier done in $(elapsed "$t0"), exit $rc"
  return "$rc"
}

run() {
  need_root
  if [ ! -e "/run/netns/$NS" ] || [ ! -f "$KCFG" ]; then die "no cluster: run hack/realnode.sh up first"; fi
  exec nsenter --net="/run/netns/$NS" env KUBECONFIG="$KCFG" PATH="$RN_DIR/bin:$PATH" \
    REALNODE_NS="$NS" REALNODE_DIR="$RN_DIR" "$@"
}

status() {
  [ -e "/run/netns/$NS" ] || { echo "no network namespace $NS: not running"; return 1; }
  BIN=$(cat "$RN_DIR/bin-dir")
  local f p
  for f in "$RN_DIR"/pids/*.pid; do
    p=$(cat "$f")
    if alive "$p"; then
      ps -o rss=,etime= -p "$p" | awk -v c="$(basename "$f" .pid)" -v p="$p" '{printf "  %-24s pid=%-8s RSS=%6.1f MiB up=%s\n", c, p, $1/1024, $2}'
    else
      echo "  $(basename "$f" .pid): not running"
    fi
  done
  kubectl get nodes -o wide
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  run) shift; [ $# -gt 0 ] || die "usage: $0 run CMD [ARGS…]"; run "$@" ;;
  status) status ;;
  test) shift; test_tier "$@" ;;
  *) echo "usage: $0 up|down|run CMD…|status|test [ARGS…]" >&2; exit 2 ;;
esac
