"""The web: pages, the API, template tags, middleware and the admin. It imports the domain only
(never the kernel's battery nor the kubernetes client)."""
