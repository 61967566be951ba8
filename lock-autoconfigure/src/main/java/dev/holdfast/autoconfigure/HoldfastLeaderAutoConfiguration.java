package dev.holdfast.autoconfigure;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;

import dev.holdfast.LeaderElections;
import dev.holdfast.aop.LeaderOnlyAdvisor;
import dev.holdfast.aop.LeaderOnlyInterceptor;
import dev.holdfast.aop.LeaderOnlyOperations;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.leader.DefaultLeaderElections;

/**
 * Auto-configuration of leader elections on Holdfast's engine: the {@link LeaderElections} bean,
 * whose events are published as application events, campaigning once the application is ready
 * and handing every group over first when the context stops; and the {@code @LeaderOnly} advisor,
 * just outside {@code @DistributedLock}'s, whose groups are joined at startup.
 */
@AutoConfiguration(after = HoldfastAutoConfiguration.class)
@ConditionalOnSingleCandidate(DefaultLockTemplate.class)
public final class HoldfastLeaderAutoConfiguration {

	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean(LeaderElections.class)
	DefaultLeaderElections holdfastLeaderElections(DefaultLockTemplate holdfastLockTemplate,
			HoldfastProperties properties, ApplicationEventPublisher publisher) {
		return new DefaultLeaderElections(holdfastLockTemplate, properties.getLeaseTime(), publisher::publishEvent);
	}

	@Bean
	@ConditionalOnSingleCandidate(DefaultLeaderElections.class)
	LeaderElectionLifecycle holdfastLeaderElectionLifecycle(DefaultLeaderElections holdfastLeaderElections) {
		return new LeaderElectionLifecycle(holdfastLeaderElections);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyOperations holdfastLeaderOnlyOperations(ConfigurableBeanFactory beanFactory) {
		return new LeaderOnlyOperations(beanFactory::resolveEmbeddedValue);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyAdvisor holdfastLeaderOnlyAdvisor(LeaderOnlyOperations operations,
			ObjectProvider<LeaderElections> elections, Environment environment) {
		int order = environment.getProperty("holdfast.aop.order", Integer.class,
				new HoldfastProperties().getAop().getOrder());
		return new LeaderOnlyAdvisor(operations, new LeaderOnlyInterceptor(operations, elections::getObject),
				order - 1);
	}

	@Bean
	static LeaderOnlyGroups holdfastLeaderOnlyGroups(ObjectProvider<LeaderOnlyOperations> operations,
			ObjectProvider<LeaderElections> elections, ConfigurableBeanFactory beanFactory) {
		return new LeaderOnlyGroups(operations, elections, beanFactory::resolveEmbeddedValue);
	}

}
