package dev.holdfast.autoconfigure;

import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;

import dev.holdfast.scheduling.SingleInstanceScheduledBeanPostProcessor;

/**
 * {@code @SingleInstanceScheduled} support: the post-processor that schedules annotated
 * methods. It needs no {@code @EnableScheduling}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty(name = "holdfast.scheduling.enabled", matchIfMissing = true)
@EnableConfigurationProperties(HoldfastSchedulingProperties.class)
class SchedulingConfiguration {

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static SingleInstanceScheduledBeanPostProcessor holdfastSingleInstanceScheduledBeanPostProcessor(
			Environment environment) {
		// A post-processor is created before @ConfigurationProperties beans: bind on first use instead.
		return new SingleInstanceScheduledBeanPostProcessor(() -> {
			HoldfastSchedulingProperties properties = Binder.get(environment)
				.bindOrCreate("holdfast.scheduling", HoldfastSchedulingProperties.class);
			return new SingleInstanceScheduledBeanPostProcessor.Defaults(properties.getLockAtMostFor(),
					properties.getLockAtLeastFor());
		});
	}

}
