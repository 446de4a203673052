"""The kernel: plain Python, no Django, no Celery. The vocabulary (catalog keys, criteria,
proxier modes, the CNI table), the SCTP test battery, the Kubernetes access (`kube`,
`kubeconfig`, `netguard`, `serviceaccount`, `bounded`), the node probe, `sctp_host` and the
in-cluster agent. The dashboard, the workers and the lab import it; it imports none of them."""
