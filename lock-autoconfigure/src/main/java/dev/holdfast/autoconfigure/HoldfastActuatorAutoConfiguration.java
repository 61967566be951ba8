package dev.holdfast.autoconfigure;

import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.MeterObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.BeanFactoryAnnotationUtils;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

import dev.holdfast.Leadership;
import dev.holdfast.actuate.JobsView;
import dev.holdfast.actuate.LeaderMetrics;
import dev.holdfast.actuate.LeaderTermMetrics;
import dev.holdfast.actuate.LeaderTermObservations;
import dev.holdfast.actuate.LeadersEndpoint;
import dev.holdfast.actuate.LockBackendHealthIndicator;
import dev.holdfast.actuate.LockMetricsListener;
import dev.holdfast.actuate.LockObservationListener;
import dev.holdfast.actuate.LocksEndpoint;
import dev.holdfast.actuate.TickClockMetrics;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockEngine;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.scheduling.ScheduledJobs;
import dev.holdfast.scheduling.SingleInstanceScheduledBeanPostProcessor;
import dev.holdfast.scheduling.TickClock;

/**
 * Operations support for Holdfast, each part active when its library is present: Micrometer
 * observations of acquisitions and holds (with an {@link ObservationRegistry} bean, as Boot's
 * spring-boot-micrometer-observation defines it), Micrometer meters (with a
 * {@link MeterRegistry} bean), the {@code locks} and {@code leaders} endpoints (Actuator,
 * exposed by Boot's rules) and the {@code holdfast} health indicator (spring-boot-health,
 * {@code management.health.holdfast.enabled}).
 * <p>
 * The acquire and held timers have one source: the observations when a
 * {@link MeterObservationHandler} bean turns them into meters (Boot's
 * {@code DefaultMeterObservationHandler}), the {@link LockMetricsListener} otherwise.
 */
@AutoConfiguration(after = { HoldfastAutoConfiguration.class, HoldfastLeaderAutoConfiguration.class },
		afterName = { "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
				"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
				"org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration" })
public final class HoldfastActuatorAutoConfiguration {

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(ObservationRegistry.class)
	@ConditionalOnBean(ObservationRegistry.class)
	static class ObservationConfiguration {

		@Bean
		@ConditionalOnMissingBean
		LockObservationListener holdfastLockObservationListener(ObservationRegistry observationRegistry) {
			return new LockObservationListener(observationRegistry);
		}

		@Bean
		@ConditionalOnBean(DefaultLeaderElections.class)
		@ConditionalOnMissingBean
		LeaderTermObservations holdfastLeaderTermObservations(ObservationRegistry observationRegistry,
				LockEngine engine, Environment environment, ListableBeanFactory beanFactory) {
			return new LeaderTermObservations(observationRegistry,
					leaderBackends(engine, named(environment, beanFactory, DefaultLeaderElections.class)));
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(MeterRegistry.class)
	@ConditionalOnBean(MeterRegistry.class)
	static class MetricsConfiguration {

		@Bean
		@ConditionalOnMissingBean
		LockMetricsListener holdfastLockMetricsListener(MeterRegistry meterRegistry,
				ObjectProvider<LockObservationListener> observations,
				ObjectProvider<MeterObservationHandler<?>> meterObservationHandlers) {
			boolean timersFromObservations = observations.getIfAvailable() != null
					&& meterObservationHandlers.stream().findAny().isPresent();
			return new LockMetricsListener(meterRegistry, !timersFromObservations);
		}

		@Bean
		@ConditionalOnBean(DefaultLeaderElections.class)
		@ConditionalOnMissingBean
		LeaderMetrics holdfastLeaderMetrics(MeterRegistry meterRegistry, DefaultLeaderElections elections,
				LockEngine engine, Environment environment, ListableBeanFactory beanFactory) {
			named(environment, beanFactory, DefaultLeaderElections.class)
				.forEach((name, named) -> LeaderMetrics.register(meterRegistry, named, name));
			return new LeaderMetrics(meterRegistry, elections, engine.backendName());
		}

		@Bean
		@ConditionalOnBean(DefaultLeaderElections.class)
		@ConditionalOnMissingBean
		LeaderTermMetrics holdfastLeaderTermMetrics(MeterRegistry meterRegistry, LockEngine engine,
				Environment environment, ListableBeanFactory beanFactory) {
			return new LeaderTermMetrics(meterRegistry,
					leaderBackends(engine, named(environment, beanFactory, DefaultLeaderElections.class)));
		}

		@Bean
		@ConditionalOnBean(SingleInstanceScheduledBeanPostProcessor.class)
		@ConditionalOnMissingBean
		TickClockMetrics holdfastTickClockMetrics(SingleInstanceScheduledBeanPostProcessor scheduling,
				ObjectProvider<LockEngine> engine, Environment environment, ListableBeanFactory beanFactory) {
			Map<String, TickClock> named = new TreeMap<>();
			NamedBackendsRegistrar.names(environment, beanFactory)
				.forEach((name) -> named.put(name, scheduling.tickClock(name)));
			LockEngine defaultEngine = engine.getIfUnique();
			return new TickClockMetrics((defaultEngine != null) ? defaultEngine.backendName() : "default",
					scheduling.tickClock(), named);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(Endpoint.class)
	@ConditionalOnSingleCandidate(LockEngine.class)
	@EnableConfigurationProperties(LocksEndpointProperties.class)
	static class EndpointConfiguration {

		@Bean
		@ConditionalOnMissingBean
		@ConditionalOnAvailableEndpoint
		LocksEndpoint holdfastLocksEndpoint(LockEngine engine, LocksEndpointProperties properties,
				ObjectProvider<SingleInstanceScheduledBeanPostProcessor> scheduling, ListableBeanFactory beanFactory,
				Environment environment) {
			String instance = (engine instanceof DefaultLockTemplate template) ? template.settings().instanceName() : "";
			SingleInstanceScheduledBeanPostProcessor jobs = scheduling.getIfUnique();
			JobsView jobsView = (jobs != null)
					? new JobsView(engine, new ScheduledJobs(jobs), skipCounts(beanFactory)) : null;
			return new LocksEndpoint(engine, instance, properties.getShowValues(), properties.getRoles(),
					properties.getMaxListed(), jobsView, named(environment, beanFactory, LockEngine.class));
		}

		/** {@code holdfast.scheduled.skipped} by reason, when Micrometer counts them. */
		private static Function<String, Map<String, Long>> skipCounts(ListableBeanFactory beanFactory) {
			if (ClassUtils.isPresent("io.micrometer.core.instrument.MeterRegistry",
					HoldfastActuatorAutoConfiguration.class.getClassLoader())) {
				Function<String, Map<String, Long>> counts = MeterSkips.of(beanFactory);
				if (counts != null) {
					return counts;
				}
			}
			return (name) -> Map.of();
		}

		@Bean
		@ConditionalOnBean(DefaultLeaderElections.class)
		@ConditionalOnMissingBean
		@ConditionalOnAvailableEndpoint
		LeadersEndpoint holdfastLeadersEndpoint(DefaultLeaderElections elections, LockEngine engine,
				Environment environment, ListableBeanFactory beanFactory) {
			Map<String, LockEngine> engines = named(environment, beanFactory, LockEngine.class);
			Map<String, LeadersEndpoint.Backend> named = new TreeMap<>();
			named(environment, beanFactory, DefaultLeaderElections.class).forEach(
					(name, backend) -> named.put(name, new LeadersEndpoint.Backend(backend, engines.get(name))));
			String instance = (engine instanceof DefaultLockTemplate template) ? template.settings().instanceName() : "";
			return new LeadersEndpoint(elections, engine, instance, named);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(HealthIndicator.class)
	@ConditionalOnSingleCandidate(LockEngine.class)
	@ConditionalOnEnabledHealthIndicator("holdfast")
	static class HealthConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "holdfastHealthIndicator")
		LockBackendHealthIndicator holdfastHealthIndicator(LockEngine engine,
				ObjectProvider<SingleInstanceScheduledBeanPostProcessor> scheduling,
				ObjectProvider<DefaultLeaderElections> elections) {
			SingleInstanceScheduledBeanPostProcessor jobs = scheduling.getIfUnique();
			return new LockBackendHealthIndicator(engine, (jobs != null) ? jobs.tickClock() : null,
					elections.getIfUnique());
		}

		/** The health of each of {@code holdfast.backends.<name>}: {@code holdfastBackends/<name>}. */
		@Bean
		@Conditional(OnNamedBackendsCondition.class)
		@ConditionalOnMissingBean(name = "holdfastBackendsHealthContributor")
		CompositeHealthContributor holdfastBackendsHealthContributor(Environment environment,
				ListableBeanFactory beanFactory, ObjectProvider<SingleInstanceScheduledBeanPostProcessor> scheduling) {
			// Named elections exist with the leader auto-configuration only (NamedBackendsRegistrar).
			Map<String, DefaultLeaderElections> elections = beanFactory
				.containsBeanDefinition(HoldfastLeaderAutoConfiguration.class.getName())
						? named(environment, beanFactory, DefaultLeaderElections.class) : Map.of();
			SingleInstanceScheduledBeanPostProcessor jobs = scheduling.getIfUnique();
			Map<String, HealthContributor> backends = new TreeMap<>();
			named(environment, beanFactory, LockEngine.class).forEach((name, engine) -> backends.put(name,
					new LockBackendHealthIndicator(engine, (jobs != null) ? jobs.tickClock(name) : null,
							elections.get(name))));
			return CompositeHealthContributor.fromMap(backends);
		}

	}

	/** The bean of {@code type} of each of {@code holdfast.backends.<name>}, by name. */
	private static <T> Map<String, T> named(Environment environment, ListableBeanFactory beanFactory, Class<T> type) {
		Map<String, T> named = new TreeMap<>();
		for (String name : NamedBackendsRegistrar.names(environment, beanFactory)) {
			named.put(name, BeanFactoryAnnotationUtils.qualifiedBeanOfType(beanFactory, type, name));
		}
		return named;
	}

	/**
	 * The {@code backend} tag of a leadership: the name of the named backend whose elections
	 * joined it (NBK-5), else the default backend's type.
	 */
	private static Function<Leadership, String> leaderBackends(LockEngine engine,
			Map<String, DefaultLeaderElections> named) {
		String defaultBackend = engine.backendName();
		if (named.isEmpty()) {
			return (leadership) -> defaultBackend;
		}
		return (leadership) -> named.entrySet()
			.stream()
			.filter((entry) -> entry.getValue().leaderships().contains(leadership))
			.map(Map.Entry::getKey)
			.findFirst()
			.orElse(defaultBackend);
	}

	/** Loaded only with Micrometer on the class path. */
	private static final class MeterSkips {

		static @Nullable Function<String, Map<String, Long>> of(ListableBeanFactory beanFactory) {
			MeterRegistry registry = beanFactory.getBeanProvider(MeterRegistry.class).getIfUnique();
			return (registry != null) ? LockMetricsListener.skipCounts(registry) : null;
		}

	}

}
