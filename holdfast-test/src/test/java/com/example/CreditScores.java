package com.example;

import java.math.BigDecimal;

/** An external service that computes a customer's credit limit, slowly. */
public interface CreditScores {

	BigDecimal limitFor(long customerId);

}
