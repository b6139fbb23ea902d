"""highwater broker: storage, replication, cluster metadata and the HTTP server."""
