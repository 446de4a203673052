// Command etcd: etcd's server (go.etcd.io/etcd/server/v3/etcdmain) at the version pinned in
// cluster/release.env, the one Kubernetes pins for its release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
