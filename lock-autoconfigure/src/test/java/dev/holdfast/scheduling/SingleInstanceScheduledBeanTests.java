package dev.holdfast.scheduling;

import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanDefinitionCustomizer;
import org.springframework.boot.LazyInitializationBeanFactoryPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Lazy;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.annotation.Schedules;

import dev.holdfast.DistributedLock;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockContext;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How jobs relate to the beans that declare them: names from the bean's class, one name per
 * bean, {@code @Scheduled} left on a job, proxied beans, lazy beans. Mistakes that would make a
 * job run twice, half or never fail at startup, or are named in a warning.
 */
@ExtendWith(OutputCaptureExtension.class)
class SingleInstanceScheduledBeanTests {

	private static final BeanDefinitionCustomizer PROTOTYPE = (definition) -> definition
		.setScope(BeanDefinition.SCOPE_PROTOTYPE);

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withBean("sharedBackend", LockBackend.class, () -> this.backend);

	@Test
	void anInheritedJobMethodIsOneJobPerBeanNamedAfterTheBeansClass() {
		this.runner.withBean("orderCleanup", OrderCleanup.class)
			.withBean("userCleanup", UserCleanup.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				OrderCleanup orders = context.getBean(OrderCleanup.class);
				UserCleanup users = context.getBean(UserCleanup.class);
				assertThat(orders.ran.await(10, TimeUnit.SECONDS)).isTrue();
				assertThat(users.ran.await(10, TimeUnit.SECONDS)).isTrue();
				assertThat(orders.keys).containsOnly("holdfast:OrderCleanup.cleanup");
				assertThat(users.keys).containsOnly("holdfast:UserCleanup.cleanup");
			});
	}

	@Test
	void twoBeansOfOneClassWithOneJobNameFailAtStartup() {
		this.runner.withBean("first", NamedJob.class)
			.withBean("second", NamedJob.class)
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("both use the job name 'named-job'")
				.hasMessageContaining("bean 'first'")
				.hasMessageContaining("bean 'second'"));
	}

	@Test
	void instancesOfAPrototypeShareItsJobName() {
		this.runner
			.withBean("prototypeJob", NamedJob.class, NamedJob::new, PROTOTYPE)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean("prototypeJob")).isNotSameAs(context.getBean("prototypeJob"));
				assertThat(context.getBean(SingleInstanceScheduledBeanPostProcessor.class).getScheduledTasks())
					.as("tasks of beans created after the refresh are listed")
					.hasSize(2);
			});
	}

	@Test
	void scheduledLeftOnAJobMethodFailsAtStartup() {
		this.runner.withUserConfiguration(ScheduledToo.class)
			.run((context) -> assertStartupFailure(context, "ScheduledToo.job",
					"also annotated with @Scheduled", "Remove @Scheduled"));
	}

	@Test
	void schedulesOnAnOverriddenMethodFailsAtStartupWithEnableScheduling() {
		this.runner.withUserConfiguration(EnableSchedulingConfiguration.class)
			.withBean(OverridesScheduled.class)
			.run((context) -> assertStartupFailure(context, "OverridesScheduled.job",
					"also annotated with @Scheduled", "Remove @Scheduled"));
	}

	@Test
	void aFinalJobMethodOfAClassProxiedBeanFailsAtStartup() {
		this.runner.withUserConfiguration(FinalJob.class)
			.run((context) -> assertStartupFailure(context, "FinalJob.job", "is final",
					"non-final"));
	}

	@Test
	void aPrivateJobMethodOfAClassProxiedBeanFailsAtStartup() {
		this.runner.withUserConfiguration(PrivateJob.class)
			.run((context) -> assertStartupFailure(context, "PrivateJob.job", "is private",
					"non-private"));
	}

	@Test
	void aNonFinalJobMethodOfAClassProxiedBeanRunsOnTheTarget() {
		this.runner.withPropertyValues("job.enabled=true").withUserConfiguration(ProxiedJob.class).run((context) -> {
			assertThat(context).hasNotFailed();
			ProxiedJob job = context.getBean(ProxiedJob.class);
			assertThat(job.getClass()).isNotEqualTo(ProxiedJob.class);
			assertThat(ProxiedJob.ranWithFieldSet.await(10, TimeUnit.SECONDS)).isTrue();
		});
	}

	@Test
	void withLazyInitializationJobBeansAreCreatedAndScheduledAtStartup() {
		this.runner.withInitializer((context) -> context.addBeanFactoryPostProcessor(
				new LazyInitializationBeanFactoryPostProcessor()))
			.withBean("heartbeat", Heartbeat.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				// before anything asks for the bean
				assertThat(context.getBean(SingleInstanceScheduledBeanPostProcessor.class).getScheduledTasks())
					.hasSize(1);
				assertThat(Heartbeat.beats.await(10, TimeUnit.SECONDS)).isTrue();
			});
	}

	@Test
	void aLazyJobBeanIsNamedInAWarningAtStartup(CapturedOutput output) {
		this.runner.withUserConfiguration(LazyJob.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(SingleInstanceScheduledBeanPostProcessor.class).getScheduledTasks()).isEmpty();
			assertThat(output).contains("WARN")
				.contains("bean 'singleInstanceScheduledBeanTests.LazyJob'")
				.contains("LazyJob.job")
				.contains("run only once the bean is created");
			context.getBean(LazyJob.class);
			assertThat(context.getBean(SingleInstanceScheduledBeanPostProcessor.class).getScheduledTasks())
				.as("scheduled once created, also where no other job was scheduled at startup")
				.hasSize(1);
		});
	}

	@Test
	void aPrototypeJobBeanNobodyAskedForIsNamedInAWarningAtStartup(CapturedOutput output) {
		this.runner
			.withBean("unrequested", NamedJob.class, NamedJob::new, PROTOTYPE)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(output).contains("WARN").contains("bean 'unrequested'").contains("prototype");
			});
	}

	private static void assertStartupFailure(AssertableApplicationContext context, String method, String problem,
			String action) {
		assertThat(context).getFailure()
			.rootCause()
			.isInstanceOf(LockConfigurationException.class)
			.hasMessageContaining(method)
			.hasMessageContaining(problem)
			.satisfies((ex) -> assertThat(((LockConfigurationException) ex).getAction()).contains(action));
	}

	@EnableScheduling
	static class EnableSchedulingConfiguration {

	}

	abstract static class AbstractCleanup {

		final CountDownLatch ran = new CountDownLatch(1);

		final Set<String> keys = java.util.concurrent.ConcurrentHashMap.newKeySet();

		@SingleInstanceScheduled(fixedRate = "100ms")
		void cleanup() {
			this.keys.add(LockContext.requireLease().key());
			this.ran.countDown();
		}

	}

	static class OrderCleanup extends AbstractCleanup {

	}

	static class UserCleanup extends AbstractCleanup {

	}

	static class NamedJob {

		@SingleInstanceScheduled(fixedRate = "1h", name = "named-job")
		void job() {
		}

	}

	static class ScheduledToo {

		@Scheduled(fixedRate = 1000)
		@SingleInstanceScheduled(fixedRate = "1s")
		void job() {
		}

	}

	abstract static class ScheduledBase {

		@Schedules({ @Scheduled(fixedRate = 1000), @Scheduled(cron = "0 0 * * * *") })
		abstract void job();

	}

	static class OverridesScheduled extends ScheduledBase {

		@Override
		@SingleInstanceScheduled(fixedRate = "1s")
		void job() {
		}

	}

	static class FinalJob {

		@SingleInstanceScheduled(fixedRate = "1s")
		public final void job() {
		}

		@DistributedLock
		public void exportNow() {
		}

	}

	static class PrivateJob {

		@SingleInstanceScheduled(fixedRate = "1s")
		private void job() {
		}

		@DistributedLock
		public void exportNow() {
		}

	}

	static class ProxiedJob {

		static final CountDownLatch ranWithFieldSet = new CountDownLatch(1);

		@org.springframework.beans.factory.annotation.Value("${job.enabled}")
		boolean enabled;

		@SingleInstanceScheduled(fixedRate = "100ms")
		void job() {
			if (this.enabled) {
				ranWithFieldSet.countDown();
			}
		}

		@DistributedLock
		public void exportNow() {
		}

	}

	static class Heartbeat {

		static final CountDownLatch beats = new CountDownLatch(1);

		@SingleInstanceScheduled(fixedRate = "100ms")
		void beat() {
			beats.countDown();
		}

	}

	@Lazy
	static class LazyJob {

		@SingleInstanceScheduled(fixedRate = "1h")
		void job() {
		}

	}

}
