package dev.holdfast.autoconfigure;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.leader.event.OnGrantedEvent;

import dev.holdfast.integration.IntegrationLeaderEvents;
import dev.holdfast.leader.DefaultLeaderElections;

/**
 * With spring-integration-core on the class path, Holdfast's leadership events are also
 * published as Spring Integration's {@code OnGrantedEvent} and {@code OnRevokedEvent}
 * ({@link IntegrationLeaderEvents}), so that Holdfast replaces
 * {@code LockRegistryLeaderInitiator} in an existing application.
 */
@AutoConfiguration(after = HoldfastLeaderAutoConfiguration.class)
@ConditionalOnClass(OnGrantedEvent.class)
@ConditionalOnBean(DefaultLeaderElections.class)
public final class HoldfastIntegrationLeaderAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	IntegrationLeaderEvents holdfastIntegrationLeaderEvents(ApplicationEventPublisher publisher) {
		return new IntegrationLeaderEvents(publisher);
	}

}
