package dev.holdfast.autoconfigure;

import java.time.DateTimeException;
import java.time.ZoneId;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.LazyInitializationExcludeFilter;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.util.StringUtils;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.core.LockEngine;
import dev.holdfast.scheduling.SingleInstanceScheduledBeanPostProcessor;

/**
 * {@code @SingleInstanceScheduled} support: the post-processor that schedules annotated
 * methods, and the filter that keeps their beans out of lazy initialization. It needs no
 * {@code @EnableScheduling}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty(name = "holdfast.scheduling.enabled", matchIfMissing = true)
@EnableConfigurationProperties(HoldfastSchedulingProperties.class)
class SchedulingConfiguration {

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static SingleInstanceScheduledBeanPostProcessor holdfastSingleInstanceScheduledBeanPostProcessor(
			Environment environment, ListableBeanFactory beanFactory) {
		// A post-processor is created before @ConfigurationProperties beans: bind on first use instead.
		return new SingleInstanceScheduledBeanPostProcessor(() -> {
			HoldfastSchedulingProperties properties = Binder.get(environment)
				.bindOrCreate("holdfast.scheduling", HoldfastSchedulingProperties.class);
			return new SingleInstanceScheduledBeanPostProcessor.Defaults(properties.getLockAtMostFor(),
					properties.getLockAtLeastFor(), zone(properties.getZone()), properties.getClockTolerance());
		}, NamedBackendsRegistrar.choice(environment, beanFactory, LockEngine.class,
				() -> beanFactory.getBeanProvider(LockEngine.class).getIfUnique()));
	}

	/**
	 * Keeps beans with {@code @SingleInstanceScheduled} methods out of Boot's lazy initialization
	 * ({@code spring.main.lazy-initialization}): a lazy job bean nobody asks for is never created,
	 * and its jobs never run.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LazyInitializationExcludeFilter holdfastSingleInstanceScheduledLazyInitializationExcludeFilter() {
		return (beanName, beanDefinition, beanType) -> SingleInstanceScheduledBeanPostProcessor.declaresJobs(beanType);
	}

	private static @Nullable ZoneId zone(@Nullable String zone) {
		if (!StringUtils.hasText(zone)) {
			return null;
		}
		try {
			return ZoneId.of(zone.trim());
		}
		catch (DateTimeException ex) {
			throw new LockConfigurationException(
					"holdfast.scheduling.zone '" + zone + "' is not a time zone: " + ex.getMessage(),
					"Set holdfast.scheduling.zone to a time zone ID such as 'Europe/Paris' or 'UTC'.");
		}
	}

}
