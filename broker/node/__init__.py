"""One broker process, split by job; ``broker_node.BrokerNode`` wires the pieces and owns start and stop.

* ``replicas``: the local ``Partition`` replicas, their logs, fetchers and checkpoints;
* ``isr_proposals``: the leader's ISR changes, written to the metadata store;
* ``catalog``: what the metadata view says about topics, partitions and brokers;
* ``describing``: partitions and topics as their leaders describe them;
* ``routing``: produce and read, answered here or forwarded to the leader;
* ``controller_gateway``: what the broker asks of the controller and the metadata store;
* ``identity``: the data directory's lock and the cluster id it belongs to.

The HTTP layer and the group coordinator talk to ``BrokerNode`` only, never to a piece.
"""
