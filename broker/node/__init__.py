"""One broker process; ``broker_node.BrokerNode`` is the object the HTTP layer and the group coordinator talk to."""
