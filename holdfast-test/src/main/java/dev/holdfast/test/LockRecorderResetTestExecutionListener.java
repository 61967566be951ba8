package dev.holdfast.test;

import org.springframework.core.Ordered;
import org.springframework.test.context.TestContext;
import org.springframework.test.context.support.AbstractTestExecutionListener;

/**
 * Clears every {@link LockRecorder} of the test's application context before each test method,
 * so that a test sees only its own acquisitions, also when the Spring TestContext framework
 * reuses the context for several test classes. Registered in {@code META-INF/spring.factories}.
 */
public class LockRecorderResetTestExecutionListener extends AbstractTestExecutionListener {

	@Override
	public int getOrder() {
		return Ordered.LOWEST_PRECEDENCE - 100;
	}

	@Override
	public void beforeTestMethod(TestContext testContext) {
		if (testContext.hasApplicationContext()) {
			testContext.getApplicationContext().getBeanProvider(LockRecorder.class).forEach(LockRecorder::clear);
		}
	}

}
