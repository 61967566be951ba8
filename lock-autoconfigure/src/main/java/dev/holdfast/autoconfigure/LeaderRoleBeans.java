package dev.holdfast.autoconfigure;

import java.util.ArrayList;
import java.util.List;

import org.aopalliance.intercept.MethodInterceptor;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.context.Lifecycle;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.annotation.AnnotatedElementUtils;

import dev.holdfast.LeaderElections;
import dev.holdfast.LeaderOnly;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LockConfigurationException;

/**
 * {@link LeaderOnly} on a {@link SmartLifecycle} bean: the context does not start it (its proxy
 * answers {@code isAutoStartup()} with false); it is started when this instance is granted the
 * group and stopped when the term is revoked, before the term's lease is released.
 */
final class LeaderRoleBeans {

	private static final Log logger = LogFactory.getLog(LeaderRoleBeans.class);

	private record Role(String group, String beanName, Lifecycle bean) {
	}

	private final List<Role> roles = new ArrayList<>();

	/**
	 * {@code bean} itself, or, when its class is {@code @LeaderOnly}, a proxy of it that the
	 * context does not start.
	 * @throws LockConfigurationException for a {@code @LeaderOnly} class that is not a
	 * {@code SmartLifecycle}
	 */
	Object register(Object bean, String beanName, java.util.function.UnaryOperator<String> placeholders) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		LeaderOnly annotation = AnnotatedElementUtils.findMergedAnnotation(targetClass, LeaderOnly.class);
		if (annotation == null) {
			return bean;
		}
		String group = placeholders.apply(annotation.group());
		if (!(bean instanceof SmartLifecycle lifecycle) || group == null || group.isBlank()) {
			throw new LockConfigurationException("@LeaderOnly on class " + targetClass.getName() + " (bean '" + beanName
					+ "') needs a SmartLifecycle bean and a group",
					"Put @LeaderOnly(\"group\") on a SmartLifecycle bean, to start it on the leader only, or on methods.");
		}
		synchronized (this.roles) {
			this.roles.add(new Role(group, beanName, lifecycle));
		}
		ProxyFactory proxy = new ProxyFactory(bean);
		proxy.setProxyTargetClass(true);
		proxy.addAdvice((MethodInterceptor) (invocation) -> "isAutoStartup".equals(invocation.getMethod().getName())
				&& invocation.getMethod().getParameterCount() == 0 ? Boolean.FALSE : invocation.proceed());
		return proxy.getProxy(targetClass.getClassLoader());
	}

	/** Joins the role beans' groups: each bean starts on a grant and stops on the revocation. */
	void join(LeaderElections elections) {
		List<Role> all;
		synchronized (this.roles) {
			all = new ArrayList<>(this.roles);
		}
		for (Role role : all) {
			elections.join(role.group()).addListener((event) -> {
				boolean granted = event instanceof LeadershipGrantedEvent;
				try {
					if (granted && !role.bean().isRunning()) {
						role.bean().start();
					}
					else if (!granted && role.bean().isRunning()) {
						role.bean().stop();
					}
				}
				catch (RuntimeException ex) {
					logger.error("Could not " + (granted ? "start" : "stop") + " bean '" + role.beanName()
							+ "' for leader group '" + role.group() + "'", ex);
				}
			});
		}
	}

}
