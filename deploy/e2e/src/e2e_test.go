// The project's out-of-tree build of upstream's e2e.test: the same TestMain as upstream's
// test/e2e/e2e_test.go at the tag, importing only the spec packages that hold the SCTP specs
// the upstream battery focuses on (test/e2e/network, which brings network/netpol, and
// test/e2e/common/network). deploy/e2e/build-binaries.sh copies this file into each
// release's wrapper module (deploy/e2e/v1.<minor>/) and runs `go test -c` there.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/component-base/version"
	conformancetestdata "k8s.io/kubernetes/test/conformance/testdata"
	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// define and freeze constants
	_ "k8s.io/kubernetes/test/e2e/feature"

	// the spec packages with SCTP specs
	_ "k8s.io/kubernetes/test/e2e/common/network"
	_ "k8s.io/kubernetes/test/e2e/network"

	// reconfigure framework, as upstream's e2e_test.go does
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
)

func TestMain(m *testing.M) {
	var versionFlag bool
	flag.CommandLine.BoolVar(&versionFlag, "version", false, "Displays version information.")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()

	if versionFlag {
		fmt.Printf("%s\n", version.Get())
		os.Exit(0)
	}
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s", flag.CommandLine.Args())
		os.Exit(1)
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	testfiles.AddFileSource(conformancetestdata.GetConformanceTestdataFS())

	framework.AfterReadingAllFlags(&framework.TestContext)
	if framework.TestContext.RepoRoot != "" {
		testfiles.AddFileSource(testfiles.RootFileSource{Root: framework.TestContext.RepoRoot})
	}
	os.Exit(m.Run())
}

func TestE2E(t *testing.T) {
	e2e.RunE2ETests(t)
}
