package dev.holdfast.autoconfigure;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.aopalliance.intercept.MethodInterceptor;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.context.Lifecycle;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.annotation.AnnotatedElementUtils;

import dev.holdfast.LeaderElections;
import dev.holdfast.LeaderOnly;
import dev.holdfast.Leadership;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.scan.BackendChoice;

/**
 * {@link LeaderOnly} on a {@link SmartLifecycle} bean: the context does not start it (its proxy
 * answers {@code isAutoStartup()} with false, and passes a {@code start()} on only while this
 * instance leads); it is started when this instance is granted the group and stopped when the
 * term is revoked, before the term's lease is released, or, if it does not stop, instead of
 * releasing it (DESIGN.md LDR-8).
 */
final class LeaderRoleBeans {

	private static final Log logger = LogFactory.getLog(LeaderRoleBeans.class);

	private record Role(String group, String backend, String beanName, Lifecycle bean,
			AtomicReference<Leadership> leadership) {
	}

	private final List<Role> roles = new ArrayList<>();

	/**
	 * {@code bean} itself, or, when its class is {@code @LeaderOnly}, a proxy of it that the
	 * context does not start.
	 * @throws LockConfigurationException for a {@code @LeaderOnly} class that is not a
	 * {@code SmartLifecycle}
	 */
	Object register(Object bean, String beanName, java.util.function.UnaryOperator<String> placeholders,
			BackendChoice<?> backends) {
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
		backends.check(annotation.backend(), "@LeaderOnly on class " + targetClass.getName());
		Role role = new Role(group, annotation.backend(), beanName, lifecycle, new AtomicReference<>());
		synchronized (this.roles) {
			this.roles.add(role);
		}
		ProxyFactory proxy = new ProxyFactory(bean);
		proxy.setProxyTargetClass(true);
		proxy.addAdvice((MethodInterceptor) (invocation) -> {
			if (invocation.getMethod().getParameterCount() != 0) {
				return invocation.proceed();
			}
			String method = invocation.getMethod().getName();
			if ("isAutoStartup".equals(method)) {
				return Boolean.FALSE;
			}
			if ("start".equals(method)) {
				// The context's start (context.start() after a stop): only on the leader (LDR-8).
				Leadership leadership = role.leadership().get();
				if (leadership == null || !leadership.isLeader()) {
					logger.debug("Bean '" + beanName + "' not started: this instance does not lead group '" + group
							+ "'");
					return null;
				}
			}
			return invocation.proceed();
		});
		return proxy.getProxy(targetClass.getClassLoader());
	}

	/** Joins the role beans' groups: each bean starts on a grant and stops on the revocation. */
	void join(BackendChoice<@Nullable LeaderElections> elections) {
		List<Role> all;
		synchronized (this.roles) {
			all = new ArrayList<>(this.roles);
		}
		for (Role role : all) {
			LeaderElections backend = elections.get(role.backend());
			if (backend == null) {
				continue;
			}
			Leadership leadership = backend.join(role.group());
			role.leadership().set(leadership);
			leadership.addListener((event) -> {
				if (event instanceof LeadershipGrantedEvent) {
					// A grant delivered after its term ended starts nothing (LDR-8).
					if (event.getTerm().isValid() && !role.bean().isRunning()) {
						try {
							role.bean().start();
						}
						catch (RuntimeException ex) {
							logger.error("Could not start bean '" + role.beanName() + "' for leader group '"
									+ role.group() + "'", ex);
						}
					}
					return;
				}
				if (role.bean().isRunning()) {
					role.bean().stop();
					if (role.bean().isRunning()) {
						// Thrown to the revocation: the lease is left to expire, not released (LDR-8).
						throw new IllegalStateException("Bean '" + role.beanName() + "' still runs after stop()");
					}
				}
			});
		}
	}

}
