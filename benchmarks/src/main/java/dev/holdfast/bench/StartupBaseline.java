package dev.holdfast.bench;

import java.util.List;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.HeldLeases;
import dev.holdfast.LeaseInfo;

/**
 * What the sample needs to start with Holdfast's auto-configurations excluded, for
 * {@link StartupCost}'s baseline: its controller takes a {@link HeldLeases}, which Holdfast's
 * template provides otherwise. Added to the sample with {@code spring.main.sources}; it loads
 * two classes of Holdfast's API and opens nothing.
 */
@Configuration(proxyBeanMethods = false)
public class StartupBaseline {

	@Bean
	HeldLeases startupBaselineHeldLeases() {
		return new NoLeases();
	}

	/** Holds nothing, as an application without Holdfast would. */
	static final class NoLeases implements HeldLeases {

		@Override
		public String backendName() {
			return "none";
		}

		@Override
		public List<LeaseInfo> heldLeases() {
			return List.of();
		}

	}

}
