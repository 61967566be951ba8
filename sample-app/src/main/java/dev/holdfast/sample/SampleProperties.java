package dev.holdfast.sample;

import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.StringUtils;

/**
 * Settings of the sample application ({@code sample.*}).
 */
@ConfigurationProperties("sample")
public class SampleProperties {

	/**
	 * Name of this instance in job runs and reservations. Defaults to the JVM's pid@host.
	 */
	private String instanceId = "";

	/**
	 * Units in stock per SKU, inserted when the SKU is not in the stock table yet.
	 */
	private Map<String, Integer> stock = new LinkedHashMap<>(Map.of("apple", 100, "pear", 100));

	public String getInstanceId() {
		return StringUtils.hasText(this.instanceId) ? this.instanceId : ManagementFactory.getRuntimeMXBean().getName();
	}

	public void setInstanceId(String instanceId) {
		this.instanceId = instanceId;
	}

	public Map<String, Integer> getStock() {
		return this.stock;
	}

	public void setStock(Map<String, Integer> stock) {
		this.stock = stock;
	}

}
