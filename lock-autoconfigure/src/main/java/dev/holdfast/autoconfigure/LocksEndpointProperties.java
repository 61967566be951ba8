package dev.holdfast.autoconfigure;

import java.util.HashSet;
import java.util.Set;

import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.context.properties.ConfigurationProperties;

import dev.holdfast.actuate.ClusterLocksView;

/**
 * Configuration of the {@code locks} endpoint, shaped like Boot's {@code env} endpoint's.
 */
@ConfigurationProperties("management.endpoint.locks")
public class LocksEndpointProperties {

	/**
	 * When to show the key part of lock keys, which comes from method arguments and may hold user
	 * data. Otherwise the key reads '<prefix><name>:******#3f2a', with the fingerprint that log
	 * lines and exception messages show for it (see holdfast.show-key-values).
	 */
	private Show showValues = Show.NEVER;

	/**
	 * Roles used to determine whether a user is authorized to see the key part of lock keys.
	 * When empty, all authenticated users are authorized.
	 */
	private Set<String> roles = new HashSet<>();

	/**
	 * Most locks that the 'locks/cluster' operation lists, and that it reads from the backend.
	 */
	private int maxListed = ClusterLocksView.DEFAULT_MAX_LISTED;

	public int getMaxListed() {
		return this.maxListed;
	}

	public void setMaxListed(int maxListed) {
		this.maxListed = maxListed;
	}

	public Show getShowValues() {
		return this.showValues;
	}

	public void setShowValues(Show showValues) {
		this.showValues = showValues;
	}

	public Set<String> getRoles() {
		return this.roles;
	}

	public void setRoles(Set<String> roles) {
		this.roles = roles;
	}

}
