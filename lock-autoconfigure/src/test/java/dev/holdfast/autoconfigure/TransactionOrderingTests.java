package dev.holdfast.autoconfigure;

import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabaseBuilder;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabaseType;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lock is taken before a {@code @Transactional} method's transaction begins and released
 * after it ends.
 */
class TransactionOrderingTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withPropertyValues("holdfast.backend=memory")
		.withUserConfiguration(TransactionalConfiguration.class);

	@Test
	void lockIsStillHeldWhenTheTransactionCommits() {
		this.runner.run((context) -> {
			Probe probe = context.getBean(Probe.class);
			Recorder recorder = context.getBean(Recorder.class);
			try (DefaultLockTemplate otherProcess = new DefaultLockTemplate(context.getBean(LockBackend.class),
					LockSettings.defaults())) {
				recorder.otherProcess = otherProcess;
				probe.transfer("acct-1");
				assertThat(recorder.transactionActiveWhenLockTaken.get()).as("transaction active when the lock was taken")
					.isFalse();
				assertThat(recorder.heldElsewhereAtCommit.get()).as("lock held by us when the transaction committed")
					.isTrue();
				assertThat(otherProcess.tryAcquire("accounts", "acct-1", LockOptions.defaults())).isPresent()
					.get()
					.satisfies(Lease::close);
			}
		});
	}

	@Test
	void advisorOrderIsAProperty() {
		this.runner.withPropertyValues("holdfast.aop.order=2147483647").run((context) -> {
			Probe probe = context.getBean(Probe.class);
			Recorder recorder = context.getBean(Recorder.class);
			try (DefaultLockTemplate otherProcess = new DefaultLockTemplate(context.getBean(LockBackend.class),
					LockSettings.defaults())) {
				recorder.otherProcess = otherProcess;
				probe.transfer("acct-2");
				// With the lowest precedence and declared after the transaction advisor, the lock runs inside it.
				assertThat(recorder.transactionActiveWhenLockTaken.get()).isTrue();
			}
		});
	}

	@Configuration(proxyBeanMethods = false)
	@EnableTransactionManagement
	static class TransactionalConfiguration {

		@Bean
		DataSource dataSource() {
			return new EmbeddedDatabaseBuilder().setType(EmbeddedDatabaseType.H2).generateUniqueName(true).build();
		}

		@Bean
		PlatformTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		Recorder recorder() {
			return new Recorder();
		}

		@Bean
		Probe probe(Recorder recorder) {
			return new Probe(recorder);
		}

	}

	static class Recorder {

		final AtomicReference<Boolean> heldElsewhereAtCommit = new AtomicReference<>();

		final AtomicReference<Boolean> transactionActiveWhenLockTaken = new AtomicReference<>();

		volatile DefaultLockTemplate otherProcess;

	}

	static class Probe {

		private final Recorder recorder;

		Probe(Recorder recorder) {
			this.recorder = recorder;
		}

		@Transactional
		@DistributedLock(name = "accounts", key = "#account")
		public void transfer(String account) {
			Recorder recorder = this.recorder;
			recorder.transactionActiveWhenLockTaken.set(dev.holdfast.LockContext.requireLease() != null
					&& TransactionSynchronizationManager.isActualTransactionActive() && lockTakenInsideTransaction());
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
				@Override
				public void afterCompletion(int status) {
					recorder.heldElsewhereAtCommit.set(status == STATUS_COMMITTED
							&& recorder.otherProcess.tryAcquire("accounts", account, LockOptions.defaults()).isEmpty());
				}
			});
		}

		/**
		 * Whether the lock advice runs inside the transaction advice: the stack shows the lock
		 * interceptor called from within the transaction interceptor.
		 */
		private boolean lockTakenInsideTransaction() {
			StackTraceElement[] stack = new Throwable().getStackTrace();
			int lock = -1;
			int transaction = -1;
			for (int i = 0; i < stack.length; i++) {
				String type = stack[i].getClassName();
				if (lock < 0 && type.endsWith("DistributedLockInterceptor")) {
					lock = i;
				}
				if (transaction < 0 && type.endsWith("TransactionInterceptor")) {
					transaction = i;
				}
			}
			return lock >= 0 && transaction >= 0 && lock < transaction;
		}

	}

}
