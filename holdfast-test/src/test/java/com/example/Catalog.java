package com.example;

/** An application's product catalog, reloaded from its source with the writer's fencing token. */
public interface Catalog {

	void reload(long fencingToken);

}
