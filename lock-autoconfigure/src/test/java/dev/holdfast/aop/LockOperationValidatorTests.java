package dev.holdfast.aop;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.util.StringUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.OnLocked;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;

/** What the validator reports at startup without failing it. */
@ExtendWith(OutputCaptureExtension.class)
class LockOperationValidatorTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withPropertyValues("holdfast.backend=memory");

	@Test
	void scheduledMethodWithADistributedLockWarnsOnceThatEveryInstanceRunsEachTick(CapturedOutput output) {
		// before: silent, and every instance of the application ran every tick
		this.runner.withBean("first", Invoicing.class).withBean("second", Invoicing.class).run((context) -> {
			assertThat(context).hasNotFailed();
			String method = Invoicing.class.getName() + ".sendInvoices";
			assertThat(output).contains("WARN")
				.contains(method + " is also @Scheduled")
				.contains("does not make a tick run once")
				.contains("@SingleInstanceScheduled");
			assertThat(StringUtils.countOccurrencesOf(output.getOut(), method)).as("once per method").isOne();
			assertThat(output).doesNotContain(Invoicing.class.getName() + ".resend");
		});
	}

	static class Invoicing {

		@Scheduled(fixedRate = 60_000)
		@DistributedLock(name = "send-invoices", onLocked = OnLocked.SKIP)
		public void sendInvoices() {
		}

		@DistributedLock(name = "send-invoices")
		public void resend() {
		}

	}

}
