package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of the Redlock backend: several independent Redis masters that hold one lock
 * together.
 */
@ConfigurationProperties("holdfast.redlock")
public class HoldfastRedlockProperties {

	/**
	 * Addresses of the independent Redis masters, as redis://host:port, or rediss://host:port for
	 * TLS. Use an odd number of at least 3: a lock needs a majority of them.
	 */
	private List<String> nodes = new ArrayList<>();

	/**
	 * Login user name on every node (Redis ACL).
	 */
	private @Nullable String username;

	/**
	 * Login password on every node.
	 */
	private @Nullable String password;

	/**
	 * How long one request to one node may take; a node that has not answered by then counts as
	 * failed for that request.
	 */
	private Duration nodeTimeout = Duration.ofMillis(200);

	/**
	 * How long establishing a connection to one node may take.
	 */
	private Duration connectTimeout = Duration.ofSeconds(1);

	/**
	 * Fraction of a lease time set aside for the clocks of this application and of the nodes
	 * running at different rates.
	 */
	private double driftFactor = 0.01;

	/**
	 * Fixed part of the clock drift allowance, added to the lease time multiplied by the drift
	 * factor.
	 */
	private Duration minDrift = Duration.ofMillis(2);

	public List<String> getNodes() {
		return this.nodes;
	}

	public void setNodes(List<String> nodes) {
		this.nodes = nodes;
	}

	public @Nullable String getUsername() {
		return this.username;
	}

	public void setUsername(@Nullable String username) {
		this.username = username;
	}

	public @Nullable String getPassword() {
		return this.password;
	}

	public void setPassword(@Nullable String password) {
		this.password = password;
	}

	public Duration getNodeTimeout() {
		return this.nodeTimeout;
	}

	public void setNodeTimeout(Duration nodeTimeout) {
		this.nodeTimeout = nodeTimeout;
	}

	public Duration getConnectTimeout() {
		return this.connectTimeout;
	}

	public void setConnectTimeout(Duration connectTimeout) {
		this.connectTimeout = connectTimeout;
	}

	public double getDriftFactor() {
		return this.driftFactor;
	}

	public void setDriftFactor(double driftFactor) {
		this.driftFactor = driftFactor;
	}

	public Duration getMinDrift() {
		return this.minDrift;
	}

	public void setMinDrift(Duration minDrift) {
		this.minDrift = minDrift;
	}

}
