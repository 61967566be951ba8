package dev.holdfast.autoconfigure;

import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.type.AnnotationMetadata;

import dev.holdfast.LockTemplate;
import dev.holdfast.aop.DistributedLockAdvisor;
import dev.holdfast.aop.DistributedLockInterceptor;
import dev.holdfast.aop.LockAspectSupport;
import dev.holdfast.aop.LockOperationSource;
import dev.holdfast.aop.LockOperationValidator;

/**
 * The {@code @DistributedLock} advisor, as infrastructure beans picked up by Spring's
 * auto-proxy creator (registered here if the application has none).
 */
@Configuration(proxyBeanMethods = false)
@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
@Import(LockAopConfiguration.AutoProxyRegistrar.class)
class LockAopConfiguration {

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LockOperationSource holdfastLockOperationSource(ConfigurableBeanFactory beanFactory,
			Environment environment) {
		// The default template is looked up only for a mode = READ, to check that its backend gives read holds.
		return new LockOperationSource(beanFactory::resolveEmbeddedValue, NamedBackendsRegistrar.choice(environment,
				beanFactory, LockTemplate.class, () -> beanFactory.getBeanProvider(LockTemplate.class).getIfUnique()));
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LockOperationValidator holdfastLockOperationValidator(ObjectProvider<LockOperationSource> operations) {
		return new LockOperationValidator(operations);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockAdvisor holdfastDistributedLockAdvisor(LockOperationSource operations,
			ObjectProvider<LockTemplate> template, BeanFactory beanFactory, Environment environment) {
		int order = environment.getProperty("holdfast.aop.order", Integer.class,
				new HoldfastProperties().getAop().getOrder());
		LockTemplate defaultTemplate = new LazyLockTemplate(template);
		LockAspectSupport support = new LockAspectSupport(operations,
				NamedBackendsRegistrar.choice(environment, beanFactory, LockTemplate.class, () -> defaultTemplate),
				beanFactory);
		return new DistributedLockAdvisor(operations, new DistributedLockInterceptor(support), order);
	}

	/**
	 * Registers an auto-proxy creator if the application has none. It proxies classes, as Boot
	 * does, unless {@code spring.aop.proxy-target-class=false} asks for interface-based proxies;
	 * {@link LockOperationValidator} then fails the context for any annotated method that no
	 * interface declares.
	 */
	static class AutoProxyRegistrar implements ImportBeanDefinitionRegistrar, EnvironmentAware {

		private Environment environment = new StandardEnvironment();

		@Override
		public void setEnvironment(Environment environment) {
			this.environment = environment;
		}

		@Override
		public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
			AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
			if (this.environment.getProperty("spring.aop.proxy-target-class", Boolean.class, true)) {
				AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
			}
		}

	}

}
