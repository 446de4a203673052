// Command kubectl: upstream's kubectl (k8s.io/kubectl/pkg/cmd) at the staging release pinned
// in cluster/release.env (the same main as k8s.io/kubernetes/cmd/kubectl).
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
