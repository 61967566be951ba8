package dev.holdfast.autoconfigure;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
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
import dev.holdfast.LockListener;
import dev.holdfast.aop.LeaderOnlyAdvisor;
import dev.holdfast.aop.LeaderOnlyInterceptor;
import dev.holdfast.aop.LeaderOnlyOperations;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.scan.BackendChoice;

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

	/** A term whose lease the engine finds lost is revoked at once, not at its next check (LDR-3). */
	@Bean
	static LockListener holdfastLeaderLossListener(ObjectProvider<DefaultLeaderElections> elections,
			Environment environment, BeanFactory beanFactory) {
		BackendChoice<@Nullable DefaultLeaderElections> backends = NamedBackendsRegistrar.choice(environment,
				beanFactory, DefaultLeaderElections.class, elections::getIfAvailable);
		return new LockListener() {
			@Override
			public void leaseLost(String name, String backend) {
				try {
					// The default backend's engine passes its type, a named one its name (NBK-5).
					DefaultLeaderElections lost = backends.get(backends.names().contains(backend) ? backend
							: BackendChoice.DEFAULT);
					if (lost != null) {
						lost.leaseLost(name);
					}
				}
				catch (BeansException ex) {
					// The context is closing: the elections' own check revokes the term.
				}
			}
		};
	}

	@Bean
	@ConditionalOnSingleCandidate(DefaultLeaderElections.class)
	LeaderElectionLifecycle holdfastLeaderElectionLifecycle(DefaultLeaderElections holdfastLeaderElections) {
		return new LeaderElectionLifecycle(holdfastLeaderElections);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyOperations holdfastLeaderOnlyOperations(ConfigurableBeanFactory beanFactory,
			Environment environment) {
		return new LeaderOnlyOperations(beanFactory::resolveEmbeddedValue,
				NamedBackendsRegistrar.choice(environment, beanFactory, LeaderElections.class, () -> null));
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyAdvisor holdfastLeaderOnlyAdvisor(LeaderOnlyOperations operations,
			ObjectProvider<LeaderElections> elections, Environment environment, BeanFactory beanFactory) {
		int order = environment.getProperty("holdfast.aop.order", Integer.class,
				new HoldfastProperties().getAop().getOrder());
		return new LeaderOnlyAdvisor(operations, new LeaderOnlyInterceptor(operations,
				NamedBackendsRegistrar.choice(environment, beanFactory, LeaderElections.class, elections::getObject)),
				order - 1);
	}

	@Bean
	static LeaderOnlyGroups holdfastLeaderOnlyGroups(ObjectProvider<LeaderOnlyOperations> operations,
			ObjectProvider<LeaderElections> elections, ConfigurableBeanFactory beanFactory, Environment environment) {
		return new LeaderOnlyGroups(operations,
				NamedBackendsRegistrar.choice(environment, beanFactory, LeaderElections.class, elections::getIfAvailable),
				beanFactory::resolveEmbeddedValue);
	}

}
