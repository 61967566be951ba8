package com.example;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;

import dev.holdfast.test.LockRecorder;

import static org.assertj.core.api.Assertions.assertThat;

@SpringBootTest(properties = "holdfast.backend=memory")
@Import(LockRecorder.class)
public class OrderServiceTests {

	@Autowired
	OrderService orders;

	@Autowired
	LockRecorder recorder;

	@Test
	void fulfilRunsUnderTheOrderLock() {
		orders.fulfil(42);
		assertThat(recorder).ranUnder("fulfil", 42);
	}

}
