"""All I/O of the protocol: the chain client, the artifact store, configuration loading."""
